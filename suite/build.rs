//! Builds the kernel suite (`../kernels`) to PTX; `src/lib.rs` embeds it.
fn main() {
    clustered_builder::build("../kernels");
}
