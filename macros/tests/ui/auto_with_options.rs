use clustered_device::clustered;

// `auto` stands alone; `auto = ..` takes no value; one `auto` per kernel.
#[clustered(auto, binding = agents)]
#[clustered(auto = 4)]
#[clustered(auto)]
#[clustered(auto)]
pub unsafe fn scale(x: *mut f32, n: u32) {
    let i = clustered_device::thread::index_1d();
    if i < n {
        *x.add(i as usize) *= 2.0;
    }
}

fn main() {}
