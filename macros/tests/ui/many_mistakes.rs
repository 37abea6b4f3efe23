use clustered_macros::clustered;

// Every mistake is reported at once, from the signature, the options and the
// checks that tie the options to the function.
#[clustered(
    binding = fast,
    indexing = tile(0, 4),
    chunk = 0,
    bypass(x, c),
    speed = 3,
)]
pub fn add(a: *const f32, c: *mut f32, n: u32) -> u32 {
    let _ = (a, c);
    n
}

fn main() {}
