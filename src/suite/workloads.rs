//! The suite's kernels, each with its inputs, launch, schedules and check.

use super::{variants, Arg, Buffer, Class, Shape, Size, Workload};

/// Every workload of the suite at `size`.
pub fn all(size: Size) -> Vec<Workload> {
    vec![vector_add(size), sgemm_tiled(size)]
}

/// Deterministic inputs in [-1, 1) (xorshift), different per `seed`.
pub fn random_floats(len: usize, seed: u64) -> impl Fn(usize) -> f32 {
    let values: Vec<f32> = {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    };
    move |i| values[i]
}

/// Compares `got` with `want` exactly, naming the first difference.
fn expect_bits(what: &str, got: &[u32], want: impl Fn(usize) -> Option<f32>) -> Result<(), String> {
    for (i, &bits) in got.iter().enumerate() {
        if let Some(want) = want(i) {
            if bits != want.to_bits() {
                return Err(format!(
                    "{what}[{i}] = {}, expected {want}",
                    f32::from_bits(bits)
                ));
            }
        }
    }
    Ok(())
}

fn vector_add(size: Size) -> Workload {
    let n: u32 = match size {
        Size::Test => 5000,
        Size::Simulate => 1 << 18,
        Size::Benchmark => 1 << 28,
    };
    let len = n as usize;
    Workload {
        name: "vector_add",
        class: Class::Streaming,
        problem: format!("n = {n}"),
        shape: Shape::linear(n, 256),
        buffers: vec![
            Buffer::floats("a", len, random_floats(len, 1)),
            Buffer::floats("b", len, random_floats(len, 2)),
            Buffer::output("c", len),
        ],
        args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n)],
        variants: variants!(kernels::vector; vector_add (0, 1, 2, 3);
            "agents chunk 8, bypass" => vector_add_agents / __clustered_contract_vector_add_agents,
            "redirect" => vector_add_redirect / __clustered_contract_vector_add_redirect,
            "persistent chunk 8" => vector_add_persistent / __clustered_contract_vector_add_persistent,
        ),
        check: |w, outputs| {
            let (a, b) = (&w.buffers[0].words, &w.buffers[1].words);
            expect_bits("c", &outputs[0], |i| {
                Some(f32::from_bits(a[i]) + f32::from_bits(b[i]))
            })
        },
    }
}

fn sgemm_tiled(size: Size) -> Workload {
    let n: u32 = match size {
        Size::Test => 64,
        Size::Simulate => 384,
        Size::Benchmark => 4096,
    };
    let len = (n * n) as usize;
    let tile = kernels::sgemm::TILE;
    Workload {
        name: "sgemm_tiled",
        class: Class::Algorithm,
        problem: format!("n = {n}"),
        shape: Shape::planar(n, n, [tile, tile]),
        buffers: vec![
            Buffer::floats("a", len, random_floats(len, 3)),
            Buffer::floats("b", len, random_floats(len, 4)),
            Buffer::output("c", len),
        ],
        args: vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n)],
        variants: variants!(kernels::sgemm; sgemm_tiled (0, 1, 2, 3);
            "raster tile(16,4)" => sgemm_tiled_raster / __clustered_contract_sgemm_tiled_raster,
            "agents tile(4,4)" => sgemm_tiled_agents / __clustered_contract_sgemm_tiled_agents,
            "redirect columns" => sgemm_tiled_redirect / __clustered_contract_sgemm_tiled_redirect,
        ),
        check: |w, outputs| {
            let n = match w.args[3] {
                Arg::U32(n) => n as usize,
                _ => unreachable!("n is the fourth argument"),
            };
            let (a, b) = (&w.buffers[0].words, &w.buffers[1].words);
            // The kernel's order: k ascending, one fused multiply-add each.
            // Rows sampled so the check stays fast at benchmark sizes.
            let rows: Vec<usize> = (0..n).step_by((n / 16).max(1)).collect();
            expect_bits("c", &outputs[0], |i| {
                let (row, col) = (i / n, i % n);
                rows.contains(&row).then(|| {
                    (0..n).fold(0.0f32, |sum, k| {
                        f32::from_bits(a[row * n + k]).mul_add(f32::from_bits(b[k * n + col]), sum)
                    })
                })
            })
        },
    }
}
