use clustered_macros::kernel;

#[kernel]
pub struct Launch {
    pub n: u32,
}

fn main() {}
