use clustered_macros::clustered;

#[clustered]
pub unsafe fn fill(x: *mut u32, n: u32)
where
    u32: Copy,
{
    for i in 0..n as usize {
        *x.add(i) = 0;
    }
}

fn main() {}
