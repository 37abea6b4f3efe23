use clustered_macros::kernel;

#[kernel]
pub unsafe fn fill<T: Copy, const N: usize>(x: *mut [T; N], value: T) {
    *x = [value; N];
}

fn main() {}
