use clustered_macros::kernel;

pub struct Table {
    pub rows: *const f32,
}

// The host copies each parameter's bytes to the GPU: a parameter is `Copy`.
#[kernel]
pub unsafe fn lookup(table: Table, out: *mut f32) {
    *out = *table.rows;
}

fn main() {}
