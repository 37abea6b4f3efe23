//! Builds the kernel suite (`../kernels`) to PTX; `src/lib.rs` embeds it.
fn main() {
    if let Err(error) = clustered_builder::Builder::new("../kernels")
        .arch("sm_90")
        .build()
    {
        // A build script reports by failing; the message says what to fix.
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}
