//! Times a table in constant memory (`constant_table!`) against the same
//! table in global memory, interleaved in one run, outputs compared bit for
//! bit: a polynomial whose coefficients every thread of a warp reads at
//! once, unrolled with every index known (`kernels::vector::horner_*`, and
//! the coefficients as kernel parameters) and in a loop at a run-time index
//! (`polynomial`, `polynomial_global`), and a lookup at an index per thread
//! (`lookup_constant`, `lookup_global`), once with the index the same
//! across each warp and once different in every lane. GPU only; says so
//! and exits without one.
//!
//! `cargo run --release --example constant_tables -- [n] [rounds]`

use std::cell::RefCell;

use clustered_suite::host::tuner::median;
use clustered_suite::host::{ClusterOptions, CudaSlice, Error, Gpu, LaunchConfig};
use kernels::vector::{
    horner_constant, horner_global, horner_parameters, lookup_constant, lookup_global, polynomial,
    polynomial_global, COEFFICIENTS, HORNER_TERMS,
};

/// A launch that writes its output into the buffer it is given.
type Launch<'a> = Box<dyn Fn(&mut CudaSlice<f32>) -> Result<(), Error> + 'a>;

/// Each launch's median over `rounds` timed runs, by turns after a warm-up,
/// and its output.
fn time(
    gpu: &Gpu,
    rounds: usize,
    len: usize,
    launches: &[Launch],
) -> Result<(Vec<f32>, Vec<Vec<f32>>), Error> {
    let outputs = (0..launches.len())
        .map(|_| gpu.zeros::<f32>(len).map(RefCell::new))
        .collect::<Result<Vec<_>, _>>()?;
    let mut times = vec![Vec::new(); launches.len()];
    for (launch, y) in launches.iter().zip(&outputs) {
        launch(&mut y.borrow_mut())?;
    }
    for _ in 0..rounds {
        for ((launch, y), times) in launches.iter().zip(&outputs).zip(&mut times) {
            times.push(gpu.time_ms(|| launch(&mut y.borrow_mut()))?);
        }
    }
    let outputs = outputs
        .iter()
        .map(|y| gpu.dtoh(&y.borrow()))
        .collect::<Result<_, _>>()?;
    Ok((times.iter().map(|t| median(t)).collect(), outputs))
}

/// `c[0] + c[1] x + ...`, Horner's rule from the highest coefficient down.
fn horner(c: &[f32], x: f32) -> f32 {
    c.iter().rev().fold(0.0f32, |v, &c| v.mul_add(x, c))
}

fn row(what: &str, constant: f32, global: f32) {
    println!(
        "| {what} | {constant:.4} | {global:.4} | {:.3} |",
        constant / global
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u32 = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1 << 26);
    let rounds: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("constant_tables: skipped, no GPU ({e})");
            return Ok(());
        }
    };
    let module = gpu.load_module(clustered_suite::PTX)?;
    let len = n as usize;
    let table: Vec<f32> = (0..COEFFICIENTS.len())
        .map(|k| ((k * 37) % 29) as f32 / 29.0 - 0.5)
        .collect();
    gpu.write_constant(&module, COEFFICIENTS, &table)?;
    let table_gpu = gpu.htod(&table)?;
    let x: Vec<f32> = (0..n)
        .map(|i| (i % 97) as f32 / 97.0 * 1.5 - 0.75)
        .collect();
    let x_gpu = gpu.htod(&x)?;
    let config = LaunchConfig::new([n.div_ceil(256), 1, 1], [256, 1, 1]);
    let options = ClusterOptions::default();
    // Every launch below indexes n floats of x and y and at most the 64 of
    // a table, and guards i < n.
    let (module, x_gpu, table_gpu, options) = (&module, &x_gpu, &table_gpu, &options);
    println!(
        "# constant_tables on {}: n = {n}, {rounds} rounds, medians in ms",
        gpu.properties().name
    );
    println!("| kernel | constant table | global memory | constant / global |");
    println!("|---|---:|---:|---:|");

    // Degree HORNER_TERMS, fixed: every index known where it is read.
    let terms = HORNER_TERMS as usize;
    let by_value: [f32; HORNER_TERMS as usize] = table[..terms].try_into()?;
    let launches: [Launch; 3] = [
        // SAFETY: as above.
        Box::new(|y| unsafe {
            gpu.launch_entry(
                module,
                horner_constant::KERNEL,
                config,
                options,
                (x_gpu, y, n),
            )
        }),
        Box::new(|y| unsafe {
            gpu.launch_entry(
                module,
                horner_global::KERNEL,
                config,
                options,
                (x_gpu, y, n, table_gpu),
            )
        }),
        Box::new(|y| unsafe {
            gpu.launch_entry(
                module,
                horner_parameters::KERNEL,
                config,
                options,
                (x_gpu, y, n, by_value),
            )
        }),
    ];
    let (m, ys) = time(&gpu, rounds, len, &launches)?;
    if ys[0] != ys[1] || ys[0] != ys[2] {
        return Err("fixed-degree polynomial: the three tables' outputs differ".into());
    }
    if let Some(i) = (0..len)
        .step_by(9973)
        .find(|&i| ys[0][i] != horner(&table[..terms], x[i]))
    {
        return Err(format!("fixed-degree polynomial: y[{i}] is not the CPU's").into());
    }
    row(
        &format!("polynomial, degree {terms} fixed (every index known)"),
        m[0],
        m[1],
    );
    println!(
        "| the same, coefficients as kernel parameters | {:.4} | | {:.3} |",
        m[2],
        m[2] / m[1]
    );

    for degree in [8, 64] {
        let launches: [Launch; 2] = [
            // SAFETY: as above.
            Box::new(|y| unsafe {
                gpu.launch_entry(
                    module,
                    polynomial::KERNEL,
                    config,
                    options,
                    (x_gpu, y, n, degree),
                )
            }),
            Box::new(|y| unsafe {
                gpu.launch_entry(
                    module,
                    polynomial_global::KERNEL,
                    config,
                    options,
                    (x_gpu, y, n, degree, table_gpu),
                )
            }),
        ];
        let (m, ys) = time(&gpu, rounds, len, &launches)?;
        if ys[0] != ys[1] {
            return Err(
                format!("polynomial of degree {degree}: the two tables' outputs differ").into(),
            );
        }
        let c = &table[..degree as usize];
        if let Some(i) = (0..len)
            .step_by(9973)
            .find(|&i| ys[0][i] != horner(c, x[i]))
        {
            return Err(format!("polynomial of degree {degree}: y[{i}] is not the CPU's").into());
        }
        row(
            &format!("polynomial, degree {degree} (an index per warp)"),
            m[0],
            m[1],
        );
    }

    let hash = |i: u32| i.wrapping_mul(0x9e37_79b9) >> 7;
    for (what, index) in [
        (
            "the same in each warp",
            &(|i: u32| hash(i / 32)) as &dyn Fn(u32) -> u32,
        ),
        ("one per lane", &hash),
    ] {
        let indices: Vec<u32> = (0..n).map(index).collect();
        let indices_gpu = gpu.htod(&indices)?;
        let indices_gpu = &indices_gpu;
        let launches: [Launch; 2] = [
            // SAFETY: as above (indices: n words).
            Box::new(|y| unsafe {
                gpu.launch_entry(
                    module,
                    lookup_constant::KERNEL,
                    config,
                    options,
                    (indices_gpu, y, n),
                )
            }),
            Box::new(|y| unsafe {
                gpu.launch_entry(
                    module,
                    lookup_global::KERNEL,
                    config,
                    options,
                    (indices_gpu, y, n, table_gpu),
                )
            }),
        ];
        let (m, ys) = time(&gpu, rounds, len, &launches)?;
        let want: Vec<f32> = indices.iter().map(|&k| table[(k % 64) as usize]).collect();
        if ys.iter().any(|y| *y != want) {
            return Err(format!("lookup, index {what}: an output differs from the table").into());
        }
        row(&format!("lookup, index {what}"), m[0], m[1]);
    }
    Ok(())
}
