use clustered_macros::clustered;

#[clustered]
pub unsafe fn fill<T: Copy>(x: *mut T, value: T, n: u32) {
    for i in 0..n as usize {
        *x.add(i) = value;
    }
}

fn main() {}
