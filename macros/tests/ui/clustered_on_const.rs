use clustered_macros::clustered;

#[clustered]
pub const N: u32 = 4;

fn main() {}
