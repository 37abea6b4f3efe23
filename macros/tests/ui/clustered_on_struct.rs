use clustered_macros::clustered;

#[clustered(binding = agents)]
pub struct Tasks {
    pub n: u32,
}

fn main() {}
