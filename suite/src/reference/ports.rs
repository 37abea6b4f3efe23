//! CPU references of the ported kernels (`kernels/src/ports/`), written from
//! what each computes, not from how its threads share the work: hotspot and
//! pathfinder step the whole grid (no pyramids), the stencil sweeps the
//! grid, spmv sums each row from its own list of nonzeros (not from the JDS
//! arrays). Same `f32` (and, where the originals use `double`, `f64`)
//! operations in the same order as the kernels, so bitwise comparable, like
//! the rest of this module.

/// The constants of hotspot's host code (`compute_tran_temp`) as `float`s,
/// for a chip of `cols x rows` cells: `(cap, rx, ry, rz, step)`.
pub fn hotspot_constants(cols: usize, rows: usize) -> (f32, f32, f32, f32, f32) {
    // Rodinia's constants: `t_chip`, `chip_height`, `chip_width` are
    // `float`s, the others `double` literals (and `K_SI` an `int`); the
    // expressions are evaluated in the types C gives them.
    let (t_chip, chip_height, chip_width) = (0.0005f32, 0.016f32, 0.016f32);
    let (factor_chip, spec_heat_si, k_si, max_pd, precision) =
        (0.5f64, 1.75e6f64, 100.0f64, 3.0e6f64, 0.001f64);
    let grid_height = chip_height / rows as f32;
    let grid_width = chip_width / cols as f32;
    let (t, h, w) = (
        f64::from(t_chip),
        f64::from(grid_height),
        f64::from(grid_width),
    );
    let cap = (factor_chip * spec_heat_si * t * w * h) as f32;
    let rx = (w / (2.0 * k_si * t * h)) as f32;
    let ry = (h / (2.0 * k_si * t * w)) as f32;
    // `K_SI` is the `int` 100 and the chip sizes `float`s: all in `float`.
    let rz = t_chip / (100.0f32 * grid_height * grid_width);
    let max_slope = (max_pd / (factor_chip * t * spec_heat_si)) as f32;
    let step = (precision / f64::from(max_slope)) as f32;
    (cap, rx, ry, rz, step)
}

/// `hotspot` run for `iterations` steps over the whole chip (what its
/// pyramids compute): each step, every cell `t` becomes
/// `t + step/Cap * (p + (ts + tn - 2.0 t) * (1/Ry) + (te + tw - 2.0 t) *
/// (1/Rx) + (80 - t) * (1/Rz))`, in `f64` from the `f32` sums and
/// reciprocals, neighbours outside the chip clamped to the cell itself.
#[allow(clippy::too_many_arguments)]
pub fn hotspot(
    power: &[f32],
    temp: &[f32],
    cols: usize,
    rows: usize,
    iterations: usize,
    (cap, rx, ry, rz, step): (f32, f32, f32, f32, f32),
) -> Vec<f32> {
    assert_eq!((power.len(), temp.len()), (cols * rows, cols * rows));
    let step_div_cap = step / cap;
    let (rx_1, ry_1, rz_1) = (1.0 / rx, 1.0 / ry, 1.0 / rz);
    let mut current = temp.to_vec();
    for _ in 0..iterations {
        let mut next = vec![0.0f32; current.len()];
        for r in 0..rows {
            for c in 0..cols {
                let at = |r: usize, c: usize| current[r * cols + c];
                let t = at(r, c);
                let (n, s) = (r.saturating_sub(1), (r + 1).min(rows - 1));
                let (w, e) = (c.saturating_sub(1), (c + 1).min(cols - 1));
                let north_south = at(s, c) + at(n, c);
                let east_west = at(r, e) + at(r, w);
                let t64 = f64::from(t);
                let flux = f64::from(power[r * cols + c])
                    + (f64::from(north_south) - 2.0 * t64) * f64::from(ry_1)
                    + (f64::from(east_west) - 2.0 * t64) * f64::from(rx_1)
                    + f64::from((80.0 - t) * rz_1);
                next[r * cols + c] = (t64 + f64::from(step_div_cap) * flux) as f32;
            }
        }
        current = next;
    }
    current
}

/// `pathfinder`: `src` advanced `rows` rows of `wall` (`rows x cols`),
/// each `next[x] = min(prev[x-1], prev[x], prev[x+1]) + wall[row][x]`,
/// neighbours clamped at the edges.
pub fn pathfinder(wall: &[u32], src: &[u32], cols: usize, rows: usize) -> Vec<u32> {
    assert_eq!((wall.len(), src.len()), (rows * cols, cols));
    let mut prev = src.to_vec();
    for row in wall.chunks(cols) {
        prev = (0..cols)
            .map(|x| {
                let left = prev[x.saturating_sub(1)];
                let right = prev[(x + 1).min(cols - 1)];
                left.min(prev[x]).min(right) + row[x]
            })
            .collect();
    }
    prev
}

/// `bpnn_layerforward` over `input_hidden` (`(n_in + 1) x 17`, updated in
/// place to the partial sums it writes back) with `input` (`n_in + 1`):
/// returns the per-block column sums (`n_in / 16 x 16`). Each block's 16 x
/// 16 products are summed over rows by the kernel's tree (`p = 2, 4, 8,
/// 16`: row `r`, a multiple of `p`, adds row `r + p/2`).
pub fn bpnn_layerforward(input: &[f32], input_hidden: &mut [f32], n_in: usize) -> Vec<f32> {
    const H: usize = 16;
    let width = H + 1;
    assert_eq!(
        (input.len(), input_hidden.len()),
        (n_in + 1, (n_in + 1) * width)
    );
    let mut partial = vec![0.0f32; n_in / H * H];
    for block in 0..n_in / H {
        let at = |r: usize, c: usize| (block * H + r + 1) * width + c + 1;
        let mut m = [[0.0f32; H]; H];
        for (r, row) in m.iter_mut().enumerate() {
            for (c, value) in row.iter_mut().enumerate() {
                *value = input_hidden[at(r, c)] * input[block * H + r + 1];
            }
        }
        let mut p = 2;
        while p <= H {
            for r in (0..H).step_by(p) {
                let below = m[r + p / 2];
                for (value, add) in m[r].iter_mut().zip(below) {
                    *value += add;
                }
            }
            p *= 2;
        }
        for (r, row) in m.iter().enumerate() {
            for (c, value) in row.iter().enumerate() {
                input_hidden[at(r, c)] = *value;
            }
        }
        partial[block * H..(block + 1) * H].copy_from_slice(&m[0]);
    }
    partial
}

/// `bpnn_adjust_weights`: `w` and `oldw` (`(n_in + 1) x 17`) updated in
/// place from `delta` (17) and `ly` (`n_in + 1`): every row `r >= 1` and
/// column `c >= 1` gets `step = 0.3 * delta[c] * ly[r] + 0.3 * oldw[r][c]`
/// in `f64`, `w += step` rounded once, `oldw = step` rounded; row 0 the same
/// with `ly = 1` (no product).
pub fn bpnn_adjust_weights(
    delta: &[f32],
    ly: &[f32],
    w: &mut [f32],
    oldw: &mut [f32],
    n_in: usize,
) {
    const H: usize = 16;
    let width = H + 1;
    assert_eq!(
        (delta.len(), ly.len(), w.len(), oldw.len()),
        (width, n_in + 1, (n_in + 1) * width, (n_in + 1) * width)
    );
    let (eta, momentum) = (0.3f64, 0.3f64);
    for (r, &l) in ly.iter().enumerate().skip(1) {
        for (c, &d) in delta.iter().enumerate().skip(1) {
            let i = r * width + c;
            let step = eta * f64::from(d) * f64::from(l) + momentum * f64::from(oldw[i]);
            w[i] = (f64::from(w[i]) + step) as f32;
            oldw[i] = step as f32;
        }
    }
    for (c, &d) in delta.iter().enumerate().skip(1) {
        let step = eta * f64::from(d) + momentum * f64::from(oldw[c]);
        w[c] = (f64::from(w[c]) + step) as f32;
        oldw[c] = step as f32;
    }
}

/// `nn_euclid`: `sqrt((lat - lat_i)^2 + (lng - lng_i)^2)` per `(lat_i,
/// lng_i)` pair of `locations`, as two products and a sum (no FMA).
pub fn nn_euclid(locations: &[f32], lat: f32, lng: f32) -> Vec<f32> {
    locations
        .chunks_exact(2)
        .map(|p| ((lat - p[0]) * (lat - p[0]) + (lng - p[1]) * (lng - p[1])).sqrt())
        .collect()
}

/// `triad`: `a[i] + s * b[i]` (no FMA).
pub fn triad(a: &[f32], b: &[f32], s: f32) -> Vec<f32> {
    a.iter().zip(b).map(|(a, b)| a + s * b).collect()
}

/// Parboil's `stencil`: `anext` (initially a copy of `a0`, as its host
/// makes it) with every interior point of the x-fastest `nx x ny x nz` grid
/// set to `(z+ + z- + y+ + y- + x+ + x-) * c1 - centre * c0`, summed in that
/// order.
pub fn parboil_stencil(a0: &[f32], nx: usize, ny: usize, nz: usize, c0: f32, c1: f32) -> Vec<f32> {
    assert_eq!(a0.len(), nx * ny * nz);
    let at = |i: usize, j: usize, k: usize| i + nx * (j + ny * k);
    let mut next = a0.to_vec();
    for k in 1..nz.saturating_sub(1) {
        for j in 1..ny.saturating_sub(1) {
            for i in 1..nx.saturating_sub(1) {
                let sum = a0[at(i, j, k + 1)]
                    + a0[at(i, j, k - 1)]
                    + a0[at(i, j + 1, k)]
                    + a0[at(i, j - 1, k)]
                    + a0[at(i + 1, j, k)]
                    + a0[at(i - 1, j, k)];
                next[at(i, j, k)] = sum * c1 - a0[at(i, j, k)] * c0;
            }
        }
    }
    next
}

/// One row of a sparse matrix times vector, from the row's own nonzeros
/// (`(column, value)` pairs in order), summed as `sum += value * x[column]`
/// (no FMA). The JDS kernel also adds its zero padding: `+ 0 * x` does not
/// change a sum of finite terms, so the bits agree.
pub fn spmv_row(row: impl IntoIterator<Item = (u32, f32)>, x: &[f32]) -> f32 {
    let mut sum = 0.0f32;
    for (column, value) in row {
        sum += value * x[column as usize];
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With no power, an ambient chip and a uniform temperature, nothing
    /// flows: every step keeps 80 degrees exactly.
    #[test]
    fn hotspot_keeps_a_chip_at_ambient_temperature() {
        let (cols, rows) = (5, 3);
        let out = hotspot(
            &[0.0; 15],
            &[80.0; 15],
            cols,
            rows,
            3,
            hotspot_constants(cols, rows),
        );
        assert_eq!(out, vec![80.0; 15]);
    }

    /// A wall with one cheap column: the path runs down it, and cells next
    /// to it pay one step less than those further away.
    #[test]
    fn pathfinder_takes_the_cheapest_neighbour() {
        let wall = [5, 0, 5, 5, 5, 0, 5, 5];
        assert_eq!(pathfinder(&wall, &[0, 0, 0, 0], 4, 2), [5, 0, 5, 10]);
    }

    /// Every partial sum of a block is the total of its column.
    #[test]
    fn layerforward_sums_each_column_of_a_block() {
        let n_in = 16;
        let input: Vec<f32> = (0..=n_in).map(|i| i as f32).collect();
        let mut weights = vec![1.0f32; (n_in + 1) * 17];
        let sums = bpnn_layerforward(&input, &mut weights, n_in);
        // sum over r = 1..=16 of r * 1.
        assert_eq!(sums, vec![136.0; 16]);
        assert_eq!(weights[17 + 1], 136.0);
    }

    /// The stencil of a constant grid is `6 c1 - c0` times it inside and
    /// the grid itself on the border.
    #[test]
    fn stencil_of_a_constant_grid() {
        let (nx, ny, nz) = (4, 3, 3);
        let next = parboil_stencil(&vec![2.0; nx * ny * nz], nx, ny, nz, 0.5, 0.25);
        let inside = 1 + nx * (1 + ny);
        assert_eq!(
            next[inside],
            (2.0 + 2.0 + 2.0 + 2.0 + 2.0 + 2.0) * 0.25 - 2.0 * 0.5
        );
        assert_eq!(next[0], 2.0);
    }
}
