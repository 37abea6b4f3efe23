//! Times a table in constant memory (`constant_table!`) against the same
//! table in global memory, interleaved in one run, outputs compared bit for
//! bit: a polynomial whose coefficients every thread of a warp reads at
//! once (`kernels::vector::polynomial`, `polynomial_global`), and a lookup
//! at an index per thread (`lookup_constant`, `lookup_global`), once with
//! the index the same across each warp and once different in every lane.
//! GPU only; says so and exits without one.
//!
//! `cargo run --release --example constant_tables -- [n] [rounds]`

use clustered_suite::host::tuner::median;
use clustered_suite::host::{ClusterOptions, Error, Gpu, LaunchConfig};
use kernels::vector::{
    horner_constant, horner_global, horner_parameters, lookup_constant, lookup_global, polynomial,
    polynomial_global, COEFFICIENTS, HORNER_TERMS,
};

/// Medians of `launches`, timed by turns `rounds` times each.
fn medians(
    gpu: &Gpu,
    rounds: usize,
    launches: &[&dyn Fn() -> Result<(), Error>],
) -> Result<Vec<f32>, Error> {
    let mut times = vec![Vec::new(); launches.len()];
    for launch in launches {
        launch()?; // warm-up
    }
    for _ in 0..rounds {
        for (launch, times) in launches.iter().zip(&mut times) {
            times.push(gpu.time_ms(launch)?);
        }
    }
    Ok(times.iter().map(|t| median(t)).collect())
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
    let hash = |i: u32| i.wrapping_mul(0x9e37_79b9) >> 7;
    let per_lane: Vec<u32> = (0..n).map(hash).collect();
    let per_warp: Vec<u32> = (0..n).map(|i| hash(i / 32)).collect();
    let config = LaunchConfig::new([n.div_ceil(256), 1, 1], [256, 1, 1]);
    let options = ClusterOptions::default();
    let device = &gpu.properties().name;
    println!("# constant_tables on {device}: n = {n}, {rounds} rounds, medians in ms");
    println!("| kernel | constant table | global memory | constant / global |");
    println!("|---|---:|---:|---:|");

    {
        // Degree HORNER_TERMS, fixed: every index known where it is read.
        let terms = HORNER_TERMS as usize;
        let by_value: [f32; HORNER_TERMS as usize] = table[..terms].try_into()?;
        let ys: Vec<_> = (0..3)
            .map(|_| gpu.zeros::<f32>(len))
            .collect::<Result<_, _>>()?;
        let ys: Vec<_> = ys.into_iter().map(std::cell::RefCell::new).collect();
        // SAFETY: x and y hold n floats, the table 64; the kernels guard i < n.
        let constant = || unsafe {
            gpu.launch_entry(
                &module,
                horner_constant::KERNEL,
                config,
                &options,
                (&x_gpu, &mut *ys[0].borrow_mut(), n),
            )
        };
        let global = || unsafe {
            gpu.launch_entry(
                &module,
                horner_global::KERNEL,
                config,
                &options,
                (&x_gpu, &mut *ys[1].borrow_mut(), n, &table_gpu),
            )
        };
        let parameters = || unsafe {
            gpu.launch_entry(
                &module,
                horner_parameters::KERNEL,
                config,
                &options,
                (&x_gpu, &mut *ys[2].borrow_mut(), n, by_value),
            )
        };
        let m = medians(&gpu, rounds, &[&constant, &global, &parameters])?;
        let outputs: Vec<Vec<f32>> = ys
            .iter()
            .map(|y| gpu.dtoh(&y.borrow()))
            .collect::<Result<_, _>>()?;
        for i in (0..len).step_by(9973) {
            let want = table[..terms]
                .iter()
                .rev()
                .fold(0.0f32, |v, &c| v.mul_add(x[i], c));
            if outputs.iter().any(|y| y[i] != want) {
                return Err(format!("fixed-degree polynomial: y[{i}] differs from {want}").into());
            }
        }
        if outputs[0] != outputs[1] || outputs[0] != outputs[2] {
            return Err("fixed-degree polynomial: the three tables' outputs differ".into());
        }
        println!(
            "| polynomial, degree {terms} fixed (every index known) | {:.4} | {:.4} | {:.3} |",
            m[0],
            m[1],
            m[0] / m[1]
        );
        println!(
            "| the same, coefficients as kernel parameters | {:.4} | | {:.3} |",
            m[2],
            m[2] / m[1]
        );
    }

    for degree in [8, 64] {
        let mut y_constant = gpu.zeros::<f32>(len)?;
        let mut y_global = gpu.zeros::<f32>(len)?;
        let (yc, yg) = (
            std::cell::RefCell::new(&mut y_constant),
            std::cell::RefCell::new(&mut y_global),
        );
        // SAFETY: x and y hold n floats, the table 64; the kernels guard i < n.
        let constant = || unsafe {
            gpu.launch_entry(
                &module,
                polynomial::KERNEL,
                config,
                &options,
                (&x_gpu, &mut **yc.borrow_mut(), n, degree),
            )
        };
        let global = || unsafe {
            gpu.launch_entry(
                &module,
                polynomial_global::KERNEL,
                config,
                &options,
                (&x_gpu, &mut **yg.borrow_mut(), n, degree, &table_gpu),
            )
        };
        let m = medians(&gpu, rounds, &[&constant, &global])?;
        let (a, b) = (gpu.dtoh(&y_constant)?, gpu.dtoh(&y_global)?);
        if a != b {
            return Err(
                format!("polynomial of degree {degree}: the two tables' outputs differ").into(),
            );
        }
        for i in (0..len).step_by(9973) {
            let want = table[..degree as usize]
                .iter()
                .rev()
                .fold(0.0f32, |v, &c| v.mul_add(x[i], c));
            if a[i] != want {
                return Err(format!(
                    "polynomial of degree {degree}: y[{i}] = {}, not {want}",
                    a[i]
                )
                .into());
            }
        }
        println!(
            "| polynomial, degree {degree} (an index per warp) | {:.4} | {:.4} | {:.3} |",
            m[0],
            m[1],
            m[0] / m[1]
        );
    }

    for (what, indices) in [
        ("the same in each warp", &per_warp),
        ("one per lane", &per_lane),
    ] {
        let indices_gpu = gpu.htod(indices)?;
        let mut y_constant = gpu.zeros::<f32>(len)?;
        let mut y_global = gpu.zeros::<f32>(len)?;
        let (yc, yg) = (
            std::cell::RefCell::new(&mut y_constant),
            std::cell::RefCell::new(&mut y_global),
        );
        // SAFETY: indices and y hold n words, the table 64; i < n guarded.
        let constant = || unsafe {
            gpu.launch_entry(
                &module,
                lookup_constant::KERNEL,
                config,
                &options,
                (&indices_gpu, &mut **yc.borrow_mut(), n),
            )
        };
        let global = || unsafe {
            gpu.launch_entry(
                &module,
                lookup_global::KERNEL,
                config,
                &options,
                (&indices_gpu, &mut **yg.borrow_mut(), n, &table_gpu),
            )
        };
        let m = medians(&gpu, rounds, &[&constant, &global])?;
        let (a, b) = (gpu.dtoh(&y_constant)?, gpu.dtoh(&y_global)?);
        let want: Vec<f32> = indices.iter().map(|&k| table[(k % 64) as usize]).collect();
        if a != want || b != want {
            return Err(format!("lookup, index {what}: an output differs from the table").into());
        }
        println!(
            "| lookup, index {what} | {:.4} | {:.4} | {:.3} |",
            m[0],
            m[1],
            m[0] / m[1]
        );
    }
    Ok(())
}
