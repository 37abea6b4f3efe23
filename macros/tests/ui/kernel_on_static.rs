use clustered_macros::kernel;

#[kernel]
pub static COUNT: u32 = 0;

fn main() {}
