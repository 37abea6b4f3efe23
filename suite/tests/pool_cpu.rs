//! The task pool (issue 15) on the CPU backend: the demo pool kernel
//! (`kernels::pool::pool_demo`), unchanged, and the pool that `task_pool!`
//! writes from ordinary kernels (`kernels::pool::pool_generated`), served by
//! `TaskPool`'s scheduler thread, and the benchmark's pool of empty tasks
//! (`kernels::pool::pool_empty`). No GPU needed.

use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::Duration;

use clustered_device::cta::Cta;
use clustered_device::pool::serve;
use clustered_host::cpu::{launch_entry, run, CpuLaunch, Machine, NoObserver};
use clustered_host::pool::{
    device_words, header_slot, pool_slots, start_marks_slot, Finished, Header, Outcome, PoolConfig,
    PoolError, Shutdown, Slot, Task, TaskPool, Ticket, DEFAULT_DEPTH, EXIT, FINISHED, IDLE, READY,
    RING_ENTRIES, RUNNING, STATUS_EMPTY_GRID, STATUS_OK, STATUS_UNKNOWN_KIND,
};
use clustered_host::ClusterOptions;
use clustered_suite::reference;
use kernels::early_exit::{ragged_sum, ragged_sum_args};
use kernels::pool::pool_generated;
use kernels::pool::{
    kmeans_assign_launch, kmeans_update_launch, pool_demo, pool_empty, sgemm64_batched,
    sgemm64_launch, KmeansAssign, KmeansUpdate, Mark, Order, Record, Saxpy, Sgemm64, Step, Wait,
    EMPTY, KINDS, KMEANS_ASSIGN, KMEANS_SUB, KMEANS_UPDATE, MARK, ORDER, RECORD, SAXPY, SGEMM64,
    SGEMM64_CTAS, STEP, WAIT,
};
use kernels::vector::{accumulate, accumulate_args, vector_add, vector_add_args};

const THREADS: u32 = 32;

/// A pool of `sms * 2` blocks of 32 threads on a simulated machine.
fn pool(sms: u32, timeout: Duration) -> TaskPool {
    pool_with(sms, timeout, false)
}

/// [`pool`], its blocks beside a publishing warp where `warp`.
fn pool_with(sms: u32, timeout: Duration, warp: bool) -> TaskPool {
    let config = PoolConfig::new(KINDS)
        .blocks(sms * 2)
        .block_threads(THREADS)
        .timeout(timeout);
    let config = with_warp(config, "pool_demo", warp);
    let pool = TaskPool::cpu(Machine::new(sms), 3, pool_demo, config).expect("the pool starts");
    assert_eq!(pool.publishing_warp(), warp);
    pool
}

/// `config` for the pool kernel `entry` on the CPU backend, with a
/// publishing warp beside each block where `warp`: only for a kernel the
/// build marked, as the GPU runs it (`clustered_abi::pool`, "A publishing
/// warp").
fn with_warp(config: PoolConfig, entry: &str, warp: bool) -> PoolConfig {
    let marked = clustered_host::ptx_publishing_warp_entries(clustered_suite::PTX)
        .iter()
        .any(|e| e == entry);
    assert!(
        marked || !warp,
        "the build did not mark {entry} for a publishing warp"
    );
    config.cpu_publishing_warp(warp)
}

fn mark(runs: &[AtomicU32], index: u32) -> Task {
    Task::new(
        MARK,
        1,
        Mark {
            runs: runs.as_ptr() as u64,
            index,
        },
    )
}

fn wait(flag: &AtomicU32) -> Task {
    Task::new(
        WAIT,
        1,
        Wait {
            flag: flag.as_ptr() as u64,
            started: 0,
        },
    )
}

/// A WAIT task that sets `started` once it holds its block.
fn wait_started(flag: &AtomicU32, started: &AtomicU32) -> Task {
    Task::new(
        WAIT,
        1,
        Wait {
            flag: flag.as_ptr() as u64,
            started: started.as_ptr() as u64,
        },
    )
}

fn await_one(word: &AtomicU32) {
    for _ in 0..100_000 {
        if word.load(Ordering::Acquire) == 1 {
            return;
        }
        thread::sleep(Duration::from_micros(100));
    }
    panic!("the task never started");
}

fn counters(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

#[test]
fn every_task_runs_exactly_once_when_four_threads_push() {
    for warp in [false, true] {
        let pool = pool_with(2, Duration::from_secs(60), warp);
        every_task_runs_exactly_once_when_four_threads_push_to(&pool);
    }
}

fn every_task_runs_exactly_once_when_four_threads_push_to(pool: &TaskPool) {
    const PER_PRODUCER: u32 = 150;
    const PRODUCERS: u32 = 4;
    let runs = counters((PER_PRODUCER * PRODUCERS) as usize);
    let mut pushed: Vec<(Ticket, u32)> = thread::scope(|scope| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let runs = &runs;
                scope.spawn(move || {
                    (0..PER_PRODUCER)
                        .map(|k| {
                            let index = p * PER_PRODUCER + k;
                            (pool.push(mark(runs, index)).unwrap(), index)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        producers
            .into_iter()
            .flat_map(|p| p.join().unwrap())
            .collect()
    });
    let mut popped: Vec<Finished> = (0..pushed.len())
        .map(|_| pool.pop_finished().unwrap())
        .collect();
    assert_eq!(pool.unfinished(), 0);
    assert_eq!(pool.try_pop_finished(), None, "no task comes out twice");
    assert_eq!(pool.pop_finished(), Err(PoolError::NothingUnfinished));
    pushed.sort();
    popped.sort_by_key(|f| f.ticket);
    for ((ticket, index), done) in pushed.iter().zip(&popped) {
        assert_eq!(done.ticket, *ticket);
        assert_eq!(done.kind, MARK);
        // The body's value is the task's own index: each slot carried its
        // own payload.
        assert_eq!(
            done.outcome,
            Outcome::Ran {
                result: *index as u64
            }
        );
    }
    for (i, count) in runs.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), 1, "task {i} ran that often");
    }
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

/// `pool_empty`, the benchmark's pool with no body but the empty task's,
/// runs a chain (each task after the previous: they ride in one ring) and
/// independent tasks between its links, each once, each returning its
/// payload's first word; also under shuffled thread orders with the race
/// detector on.
#[test]
fn the_empty_pool_runs_a_chain_and_independent_tasks_once_each() {
    // In order, then under shuffled thread orders with the race detector on.
    // Each with the blocks beside a publishing warp and without.
    for (machine, warp) in [
        (Machine::new(2), false),
        (Machine::new(2), true),
        (Machine::new(2).interleave(5).check_races(true), false),
        (Machine::new(2).interleave(5).check_races(true), true),
        (Machine::new(2).interleave(17).check_races(true), true),
    ] {
        let config = PoolConfig::new(KINDS)
            .blocks(4)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60));
        let config = with_warp(config, "pool_empty", warp);
        let pool = TaskPool::cpu(machine, 3, pool_empty, config).unwrap();
        let mut pushed = Vec::new();
        let mut link: Option<Ticket> = None;
        for i in 0..60u32 {
            let task = Task::new(EMPTY, 1, [1000 + i, 0, 0, 0]);
            let ticket = if i % 3 == 0 {
                let after: Vec<Ticket> = link.into_iter().collect();
                let ticket = pool.push_after(task, &after).unwrap();
                link = Some(ticket);
                ticket
            } else {
                pool.push(task).unwrap()
            };
            pushed.push((ticket, u64::from(1000 + i)));
        }
        let mut popped: Vec<(Ticket, Outcome)> = (0..pushed.len())
            .map(|_| {
                let done = pool.pop_finished().unwrap();
                (done.ticket, done.outcome)
            })
            .collect();
        assert_eq!(pool.try_pop_finished(), None, "no task comes out twice");
        popped.sort_by_key(|(ticket, _)| *ticket);
        let want: Vec<(Ticket, Outcome)> = pushed
            .into_iter()
            .map(|(ticket, result)| (ticket, Outcome::Ran { result }))
            .collect();
        assert_eq!(popped, want);
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
    }
}

/// Batches: four threads push batches with `push_many` (one lock per batch,
/// consecutive tickets), one consumer takes them with `pop_finished_many`;
/// every task runs once, with its own payload.
#[test]
fn batches_pushed_from_four_threads_run_exactly_once() {
    const BATCHES: u32 = 6;
    const BATCH: u32 = 25;
    const PRODUCERS: u32 = 4;
    let pool = pool(2, Duration::from_secs(60));
    let runs = counters((BATCHES * BATCH * PRODUCERS) as usize);
    let total = runs.len();
    let (pushed, popped) = thread::scope(|scope| {
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (pool, runs) = (&pool, &runs);
                scope.spawn(move || {
                    let mut pushed = Vec::new();
                    for b in 0..BATCHES {
                        let first = (p * BATCHES + b) * BATCH;
                        let tasks: Vec<Task> =
                            (first..first + BATCH).map(|i| mark(runs, i)).collect();
                        let tickets = pool.push_many(&tasks).unwrap();
                        assert_eq!(tickets.len(), tasks.len());
                        assert!(
                            tickets.windows(2).all(|w| w[1].0 == w[0].0 + 1),
                            "consecutive"
                        );
                        pushed.extend(tickets.into_iter().zip(first..));
                    }
                    pushed
                })
            })
            .collect();
        let mut popped: Vec<Finished> = Vec::new();
        while popped.len() < total {
            match pool.pop_finished_many(16) {
                Ok(batch) => {
                    assert!((1..=16).contains(&batch.len()), "{} at once", batch.len());
                    popped.extend(batch);
                }
                // The producers may not have pushed yet.
                Err(PoolError::NothingUnfinished) => thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        let pushed: Vec<(Ticket, u32)> = producers
            .into_iter()
            .flat_map(|p| p.join().unwrap())
            .collect();
        (pushed, popped)
    });
    assert_eq!(pool.try_pop_finished(), None, "no task comes out twice");
    let mut results: Vec<(Ticket, Outcome)> =
        popped.iter().map(|f| (f.ticket, f.outcome)).collect();
    results.sort_by_key(|r| r.0);
    let mut expected: Vec<(Ticket, Outcome)> = pushed
        .iter()
        .map(|&(t, i)| (t, Outcome::Ran { result: i as u64 }))
        .collect();
    expected.sort_by_key(|r| r.0);
    assert_eq!(results, expected);
    for (i, count) in runs.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), 1, "task {i} ran that often");
    }
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

/// With no spin window the scheduler yields and sleeps between passes
/// whenever tasks are in flight, and it sleeps on its condition variable when
/// idle: every task still runs once, including one pushed after a pause
/// longer than the idle wait (a push must wake it).
#[test]
fn a_scheduler_that_never_spins_still_runs_every_task_once() {
    let config = PoolConfig::new(KINDS)
        .blocks(4)
        .block_threads(THREADS)
        .spin(Duration::ZERO)
        .timeout(Duration::from_secs(60));
    let pool = TaskPool::cpu(Machine::new(2), 3, pool_demo, config).expect("the pool starts");
    let runs = counters(201);
    for index in 0..200 {
        pool.push(mark(&runs, index)).unwrap();
    }
    for _ in 0..200 {
        assert!(matches!(
            pool.pop_finished().unwrap().outcome,
            Outcome::Ran { .. }
        ));
    }
    thread::sleep(Duration::from_millis(120));
    let late = pool.push(mark(&runs, 200)).unwrap();
    assert_eq!(pool.pop_finished().unwrap().ticket, late);
    for (i, count) in runs.iter().enumerate() {
        assert_eq!(count.load(Ordering::Relaxed), 1, "task {i} ran that often");
    }
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

#[test]
fn mixed_kinds_match_the_reference() {
    let pool = pool(2, Duration::from_secs(60));
    // Saxpy over ranges of several sizes, each its own grid of CTAs.
    let sizes = [1u32, 31, 32, 100, 257];
    let xs: Vec<Vec<f32>> = sizes
        .iter()
        .map(|&n| (0..n).map(|i| i as f32 * 0.5).collect())
        .collect();
    let mut ys: Vec<Vec<f32>> = sizes
        .iter()
        .map(|&n| (0..n).map(|i| 1.0 + i as f32).collect())
        .collect();
    let expected: Vec<Vec<f32>> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| x.iter().zip(y).map(|(x, y)| 3.0 * x + y).collect())
        .collect();
    // 64x64 SGEMM tiles, each over 4 CTAs of 16 rows.
    let a: Vec<f32> = (0..64 * 64).map(|i| ((i % 7) as f32) - 3.0).collect();
    let b: Vec<f32> = (0..64 * 64).map(|i| ((i % 5) as f32) * 0.25).collect();
    let mut c = vec![vec![0f32; 64 * 64]; 2];
    for (x, y) in xs.iter().zip(ys.iter_mut()) {
        let n = x.len() as u32;
        let args = Saxpy {
            x: x.as_ptr() as u64,
            y: y.as_mut_ptr() as u64,
            a: 3.0,
            n,
        };
        pool.push(Task::new(SAXPY, n.div_ceil(THREADS), args))
            .unwrap();
    }
    for tile in &mut c {
        let args = Sgemm64 {
            a: a.as_ptr() as u64,
            b: b.as_ptr() as u64,
            c: tile.as_mut_ptr() as u64,
        };
        pool.push(Task::new(SGEMM64, SGEMM64_CTAS, args)).unwrap();
    }
    pool.push(Task::new(EMPTY, 1, 42u32)).unwrap();
    let mut empty_result = None;
    for _ in 0..sizes.len() + c.len() + 1 {
        let done = pool.pop_finished().unwrap();
        if done.kind == EMPTY {
            empty_result = Some(done.outcome);
        }
    }
    assert_eq!(empty_result, Some(Outcome::Ran { result: 42 }));
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
    assert_eq!(ys, expected, "saxpy");
    for tile in &c {
        for row in 0..64 {
            for col in 0..64 {
                let want: f32 = (0..64).map(|k| a[row * 64 + k] * b[k * 64 + col]).sum();
                assert_eq!(tile[row * 64 + col], want, "sgemm ({row}, {col})");
            }
        }
    }
}

/// The device side of the protocol, driven by hand (no `TaskPool`): the
/// states a block writes, the status of an unknown kind, the ring served in
/// order (a task behind a running one starts without the host, entries wrap
/// around), and EXIT seen only in the entry the block reads next.
#[test]
fn a_block_walks_its_ring_in_order() {
    // One ring, the header and the start marks after it, and the pool's
    // device words; two blocks: the worker and the publisher.
    let mut slots: Box<[Slot]> = vec![Slot::IDLE; pool_slots(1)].into_boxed_slice();
    let words: Box<[AtomicU32]> = (0..device_words(1)).map(|_| AtomicU32::new(0)).collect();
    // SAFETY: the last slot has a header's size and alignment.
    unsafe {
        (slots.as_mut_ptr().add(header_slot(1)) as *mut Header)
            .write(Header::new(words.as_ptr() as u64, THREADS))
    };
    let ring = slots.as_ptr() as *mut Slot;
    let entry = |e: usize| ring.wrapping_add(e % RING_ENTRIES);
    let state =
        |e: usize| unsafe { AtomicU32::from_ptr(std::ptr::addr_of_mut!((*entry(e)).state)) };
    let address = ring as usize;
    let engine = thread::spawn(move || {
        let launch = CpuLaunch {
            grid: [2, 1, 1],
            block: [THREADS, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 2,
        };
        let body = || unsafe { pool_demo(address as *mut Slot) };
        run(&Machine::new(1), &launch, &mut NoObserver, &body)
    });
    let await_state = |e: usize, want: u32| {
        for _ in 0..20_000 {
            if state(e).load(Ordering::Acquire) == want {
                return;
            }
            thread::sleep(Duration::from_micros(100));
        }
        panic!("entry {e} never reached state {want}");
    };
    // An entry runs CTAs `first..first + count` of its task's grid.
    let write_share = |e: usize, task: Task, first: u32, count: u32| unsafe {
        (*entry(e)).kind = task.kind();
        (*entry(e)).ctas = task.ctas();
        (*entry(e)).first = first;
        (*entry(e)).count = count;
        (*entry(e)).payload = *task.payload();
        state(e).store(READY, Ordering::Release);
    };
    let write = |e: usize, task: Task| write_share(e, task, 0, task.ctas());
    let collect = |e: usize| unsafe {
        let answer = ((*entry(e)).status, (*entry(e)).result);
        state(e).store(IDLE, Ordering::Relaxed);
        answer
    };
    // An idle ring stays idle: the block only polls.
    thread::sleep(Duration::from_millis(20));
    assert!((0..RING_ENTRIES).all(|e| state(e).load(Ordering::Acquire) == IDLE));
    // Entry 0: READY -> RUNNING (a WAIT task holds it there) -> FINISHED.
    // Entry 1, written while entry 0 runs, waits behind it; entry 2 is
    // refused (unknown kind) once entry 1 ran.
    let (first, second) = (AtomicU32::new(0), AtomicU32::new(0));
    let (first_started, second_started) = (AtomicU32::new(0), AtomicU32::new(0));
    write(0, wait_started(&first, &first_started));
    await_state(0, RUNNING);
    write(1, wait_started(&second, &second_started));
    write(2, Task::new(KINDS + 3, 1, 0u32));
    thread::sleep(Duration::from_millis(20));
    assert_eq!(
        second_started.load(Ordering::Acquire),
        0,
        "entry 1 ran early"
    );
    assert_eq!(state(1).load(Ordering::Acquire), READY);
    first.store(1, Ordering::Release);
    // Entry 1 starts without the host touching the ring again.
    await_one(&second_started);
    assert_eq!(state(0).load(Ordering::Acquire), FINISHED);
    assert_eq!(collect(0), (STATUS_OK, 1));
    second.store(1, Ordering::Release);
    await_state(2, FINISHED);
    assert_eq!(collect(1), (STATUS_OK, 1));
    assert_eq!(collect(2).0, STATUS_UNKNOWN_KIND);
    // Entries 3.. and around the end of the ring: each EMPTY task returns
    // its payload, in order; entries whose share holds no CTA of the grid
    // (past its end, or none) run nothing.
    for e in 3..RING_ENTRIES + 3 {
        let (first, count, status) = match e {
            5 => (4, 1, STATUS_EMPTY_GRID),
            6 => (0, 0, STATUS_EMPTY_GRID),
            7 => (3, 9, STATUS_OK),
            _ => (0, 4, STATUS_OK),
        };
        write_share(e, Task::new(EMPTY, 4, e as u32), first, count);
        await_state(e, FINISHED);
        let (got, result) = collect(e);
        assert_eq!(got, status, "entry {e}");
        if status == STATUS_OK {
            assert_eq!(result, e as u64);
        }
    }
    // EXIT in an entry the block does not read next is not seen: the block
    // polls entry 3 (= RING_ENTRIES + 3) only.
    state(RING_ENTRIES + 4).store(EXIT, Ordering::Release);
    thread::sleep(Duration::from_millis(20));
    assert!(
        !engine.is_finished(),
        "the block left at an EXIT it must not read"
    );
    state(RING_ENTRIES + 4).store(IDLE, Ordering::Relaxed);
    // EXIT in the entry it reads next ends the kernel.
    state(RING_ENTRIES + 3).store(EXIT, Ordering::Release);
    engine
        .join()
        .unwrap()
        .expect("the pool kernel ran to its end");
    // The worker counted its RING_ENTRIES + 3 tasks and left; the publisher
    // published them all.
    let word = |i: usize| words[i].load(Ordering::Acquire);
    assert_eq!(
        (word(0), word(1), word(2)),
        (RING_ENTRIES as u32 + 3, 1, RING_ENTRIES as u32 + 3)
    );
    // Both blocks marked their start after the header (`abi::pool`,
    // "Starts"), and nothing beyond the two marks.
    let marks = slots[start_marks_slot(1)..].as_ptr().cast::<u32>();
    let mark = |b: usize| unsafe { marks.add(b).read() };
    assert_eq!((mark(0), mark(1), mark(2)), (1, 1, 0));
    drop(slots);
}

#[test]
fn drain_runs_the_queue_and_cancel_drops_it() {
    for mode in [Shutdown::Drain, Shutdown::Cancel] {
        // One block: a waiting task holds it while the rest queue up. Depth
        // 1 keeps them all on the host, where Cancel can drop them.
        let config = PoolConfig::new(KINDS)
            .blocks(1)
            .depth(1)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60));
        let pool = TaskPool::cpu(Machine::new(1), 2, pool_demo, config).unwrap();
        let flag = AtomicU32::new(0);
        let runs = counters(10);
        let started = AtomicU32::new(0);
        let first = pool.push(wait_started(&flag, &started)).unwrap();
        // Only once it holds the block is it running, not queued.
        await_one(&started);
        let queued: Vec<Ticket> = (0..10)
            .map(|i| pool.push(mark(&runs, i)).unwrap())
            .collect();
        let rest = thread::scope(|scope| {
            scope.spawn(|| {
                thread::sleep(Duration::from_millis(100));
                flag.store(1, Ordering::Release);
            });
            pool.shutdown(mode).unwrap()
        });
        assert_eq!(
            pool.push(mark(&runs, 0)),
            Err(PoolError::ShutDown),
            "{mode:?}"
        );
        // Nothing was popped: every task comes back from shutdown, once.
        assert_eq!(rest.len(), 11, "{mode:?}");
        let waited = rest.iter().find(|f| f.ticket == first).unwrap();
        assert_eq!(waited.outcome, Outcome::Ran { result: 1 }, "{mode:?}");
        for ticket in &queued {
            let done = rest.iter().find(|f| f.ticket == *ticket).unwrap();
            match mode {
                Shutdown::Drain => assert!(matches!(done.outcome, Outcome::Ran { .. })),
                Shutdown::Cancel => assert_eq!(done.outcome, Outcome::Cancelled),
            }
        }
        let ran: u32 = runs.iter().map(|r| r.load(Ordering::Relaxed)).sum();
        assert_eq!(ran, if mode == Shutdown::Drain { 10 } else { 0 });
        assert_eq!(pool.shutdown(mode), Ok(Vec::new()), "a second shutdown");
    }
}

#[test]
fn a_task_that_does_not_return_times_out_and_its_result_is_kept() {
    for warp in [false, true] {
        a_task_that_does_not_return_times_out_on(pool_with(1, Duration::from_millis(200), warp));
    }
}

fn a_task_that_does_not_return_times_out_on(pool: TaskPool) {
    let (flag, started) = (AtomicU32::new(0), AtomicU32::new(0));
    let stuck = pool.push(wait_started(&flag, &started)).unwrap();
    await_one(&started);
    match pool.pop_finished() {
        Err(PoolError::Timeout {
            unfinished,
            in_slots,
            ..
        }) => {
            assert_eq!(unfinished, 1);
            assert_eq!(in_slots.len(), 1);
            assert_eq!(in_slots[0].ticket, stuck);
            assert_eq!(in_slots[0].state, "RUNNING");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    // A drain that cannot finish times out too, without hanging.
    assert!(matches!(
        pool.shutdown(Shutdown::Drain),
        Err(PoolError::Timeout { .. })
    ));
    flag.store(1, Ordering::Release);
    // The late result is not lost.
    let rest = loop {
        match pool.shutdown(Shutdown::Drain) {
            Ok(rest) => break rest,
            Err(PoolError::Timeout { .. }) => continue,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        rest,
        vec![Finished {
            ticket: stuck,
            kind: WAIT,
            outcome: Outcome::Ran { result: 1 }
        }]
    );
}

#[test]
fn a_dependent_task_waits_for_its_dependency() {
    let pool = pool(2, Duration::from_secs(60));
    let flag = AtomicU32::new(0);
    let runs = counters(1);
    let a = pool.push(wait(&flag)).unwrap();
    let c = pool.push_after(mark(&runs, 0), &[a]).unwrap();
    // Three idle blocks, yet `c` does not start while `a` runs (it waits
    // behind `a` in `a`'s ring).
    thread::sleep(Duration::from_millis(100));
    assert_eq!(pool.try_pop_finished(), None);
    assert_eq!(runs[0].load(Ordering::Relaxed), 0);
    assert_eq!(pool.unfinished(), 2);
    flag.store(1, Ordering::Release);
    assert_eq!(pool.pop_finished().unwrap().ticket, a);
    assert_eq!(pool.pop_finished().unwrap().ticket, c);
    assert_eq!(runs[0].load(Ordering::Relaxed), 1);
    assert_eq!(
        pool.push_after(mark(&runs, 0), &[Ticket(99)]),
        Err(PoolError::UnknownDependency(Ticket(99)))
    );
}

#[test]
fn bad_tasks_and_pools_are_refused() {
    let pool = pool(1, Duration::from_secs(60));
    assert_eq!(
        pool.push(Task::new(KINDS, 1, 0u32)),
        Err(PoolError::UnknownKind {
            kind: KINDS,
            kinds: KINDS
        })
    );
    assert_eq!(
        pool.push(Task::new(EMPTY, 0, 0u32)),
        Err(PoolError::EmptyGrid { kind: EMPTY })
    );
    // push_many is all or nothing: the good task before the bad one stays out.
    let runs = counters(1);
    assert_eq!(
        pool.push_many(&[mark(&runs, 0), Task::new(KINDS, 1, 0u32)]),
        Err(PoolError::UnknownKind {
            kind: KINDS,
            kinds: KINDS
        })
    );
    assert_eq!(pool.unfinished(), 0);
    assert_eq!(pool.pop_finished(), Err(PoolError::NothingUnfinished));
    assert_eq!(runs[0].load(Ordering::Relaxed), 0);
    // 4 rings and the publisher on 2 SMs that keep 2 blocks each cannot
    // all be resident; 3 rings can.
    let config = PoolConfig::new(KINDS).blocks(4).block_threads(THREADS);
    assert_eq!(
        TaskPool::cpu(Machine::new(2), 2, pool_demo, config).unwrap_err(),
        PoolError::TooLarge {
            blocks: 5,
            resident: 4
        }
    );
    let config = PoolConfig::new(KINDS).blocks(3).block_threads(THREADS);
    let pool = TaskPool::cpu(Machine::new(2), 2, pool_demo, config).expect("3 rings fit");
    assert_eq!(pool.slots(), 3);
    pool.shutdown(Shutdown::Drain).expect("an idle pool drains");
}

/// A task of many CTAs pushed to an idle pool of 8 blocks runs on all 8
/// (a share of its CTAs each), every CTA once, and its result is its last
/// CTA's; with `spread(false)` one block runs it whole.
#[test]
fn a_task_of_many_ctas_spreads_over_idle_blocks() {
    const CTAS: u32 = 12;
    for spread in [true, false] {
        let config = PoolConfig::new(KINDS)
            .blocks(8)
            .block_threads(THREADS)
            .spread(spread);
        let pool = TaskPool::cpu(Machine::new(4), 3, pool_demo, config).unwrap();
        let (runs, blocks) = (counters(CTAS as usize), counters(CTAS as usize));
        let args = Record {
            runs: runs.as_ptr() as u64,
            blocks: blocks.as_ptr() as u64,
        };
        let ticket = pool.push(Task::new(RECORD, CTAS, args)).unwrap();
        let done = pool.pop_finished().unwrap();
        assert_eq!(done.ticket, ticket);
        assert_eq!(
            done.outcome,
            Outcome::Ran {
                result: u64::from(CTAS - 1)
            }
        );
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
        let runs: Vec<u32> = runs.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        assert_eq!(runs, [1; CTAS as usize], "spread {spread}");
        let mut used: Vec<u32> = blocks.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        used.sort();
        used.dedup();
        assert_eq!(used.len(), if spread { 8 } else { 1 }, "{used:?}");
    }
}

/// A task spread over several blocks, then one after it that reads what
/// every CTA of the first wrote, with the race detector on and the threads
/// interleaved: the dependent waits for every share (the host collects them
/// all before it), and sees all of their writes.
#[test]
fn a_dependent_of_a_spread_task_sees_every_share_s_writes() {
    const N: u32 = 8 * THREADS;
    for seed in [5, 17] {
        let config = PoolConfig::new(pool_generated::KINDS)
            .blocks(4)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60));
        let machine = Machine::new(2).interleave(seed).check_races(true);
        let pool = TaskPool::cpu(machine, 3, pool_generated, config).unwrap();
        let a: Vec<f32> = (0..N).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..N).map(|i| (3 * i) as f32).collect();
        let mut c = vec![0f32; N as usize];
        let mut d = vec![0f32; N as usize];
        // c = a + b over N / THREADS CTAs: spread over the idle blocks.
        let add = |a: *const f32, b: *const f32, c: *mut f32| {
            let (a, b, c) = (a as u64, b as u64, c as u64);
            pool_generated::task(N / THREADS, vector_add_args { a, b, c, n: N })
        };
        let first = pool
            .push(add(a.as_ptr(), b.as_ptr(), c.as_mut_ptr()))
            .unwrap();
        // d = c + c, every element written by a CTA of the first task.
        pool.push_after(add(c.as_ptr(), c.as_ptr(), d.as_mut_ptr()), &[first])
            .unwrap();
        for _ in 0..2 {
            let done = pool.pop_finished().unwrap();
            assert!(matches!(done.outcome, Outcome::Ran { .. }), "{done:?}");
        }
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
        for i in 0..N as usize {
            assert_eq!(d[i], 2.0 * (a[i] + b[i]), "seed {seed}: element {i}");
        }
    }
}

/// The workloads of `suite/examples/pool_workloads.rs` at small sizes:
/// SGEMM64 tasks and two iterations of the k-means graph (assigns after the
/// previous update, the update after every assign), bit for bit against
/// the CPU reference.
#[test]
fn sgemm64_tasks_and_a_kmeans_graph_match_the_reference() {
    // Every way the scheduler may place a dependent (riding, gated and
    // split, or waiting for the host; whole or in shares), each on its own
    // shuffled thread order with the race detector on; and gated tasks at
    // depth 1, one task in flight per block.
    // Two of them beside a publishing warp too.
    for (gates, spread, depth, seed, warp) in [
        (true, true, DEFAULT_DEPTH, 5, false),
        (true, false, DEFAULT_DEPTH, 17, false),
        (false, true, DEFAULT_DEPTH, 29, false),
        (false, false, DEFAULT_DEPTH, 41, false),
        (true, true, 1, 53, false),
        (true, true, DEFAULT_DEPTH, 61, true),
        (false, false, DEFAULT_DEPTH, 67, true),
    ] {
        let config = PoolConfig::new(KINDS)
            .blocks(4)
            .block_threads(THREADS)
            .gates(gates)
            .spread(spread)
            .depth(depth)
            .timeout(Duration::from_secs(60));
        let config = with_warp(config, "pool_demo", warp);
        let machine = Machine::new(2).interleave(seed).check_races(true);
        let pool = TaskPool::cpu(machine, 3, pool_demo, config).unwrap();
        let how = format!("gates {gates}, spread {spread}, depth {depth}, warp {warp}");
        sgemm64_tasks_and_a_kmeans_graph_on(&pool, &how);
    }
}

/// The body of [`sgemm64_tasks_and_a_kmeans_graph_match_the_reference`] on
/// `pool`; `how` names the pool's configuration in failures.
fn sgemm64_tasks_and_a_kmeans_graph_on(pool: &TaskPool, how: &str) {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    // Three products, each its own A, B and C.
    let inputs: Vec<(Vec<f32>, Vec<f32>)> = (0..3)
        .map(|m| {
            let a = (0..64 * 64).map(|i| ((i * 7 + m) % 13) as f32 * 0.3 - 1.7);
            let b = (0..64 * 64).map(|i| ((i * 5 + m) % 11) as f32 * 0.1 - 0.45);
            (a.collect(), b.collect())
        })
        .collect();
    let mut c = vec![vec![f32::NAN; 64 * 64]; inputs.len()];
    for ((a, b), c) in inputs.iter().zip(&mut c) {
        let args = Sgemm64 {
            a: a.as_ptr() as u64,
            b: b.as_ptr() as u64,
            c: c.as_mut_ptr() as u64,
        };
        pool.push(Task::new(SGEMM64, SGEMM64_CTAS, args)).unwrap();
    }
    // k-means: 1100 points (the last CTA partial), 5 clusters, chunks of
    // 512 points (2 CTAs; the last task 1 CTA of 76 points).
    let (n, k, chunk) = (1100u32, 5u32, 512u32);
    let points: Vec<f32> = (0..2 * n)
        .map(|i| ((i * 37 + i / 2 * 11) % 101) as f32 * 0.05)
        .collect();
    let initial = points[..2 * k as usize].to_vec();
    let mut centroids = initial.clone();
    let mut labels = vec![u32::MAX; n as usize];
    let subs = n.div_ceil(KMEANS_SUB);
    let mut partials = vec![0f32; (subs * k * 3) as usize];
    let mut after = Vec::new();
    for _ in 0..2 {
        let assigns: Vec<Ticket> = (0..n)
            .step_by(chunk as usize)
            .map(|first| {
                let args = KmeansAssign {
                    points: points.as_ptr() as u64,
                    centroids: centroids.as_ptr() as u64,
                    labels: labels.as_mut_ptr() as u64,
                    partials: partials.as_mut_ptr() as u64,
                    first,
                    n,
                    k,
                };
                let ctas = chunk.min(n - first).div_ceil(KMEANS_SUB);
                pool.push_after(Task::new(KMEANS_ASSIGN, ctas, args), &after)
                    .unwrap()
            })
            .collect();
        let args = KmeansUpdate {
            partials: partials.as_ptr() as u64,
            centroids: centroids.as_mut_ptr() as u64,
            subs,
            k,
        };
        after = vec![pool
            .push_after(Task::new(KMEANS_UPDATE, 1, args), &assigns)
            .unwrap()];
    }
    let tasks = inputs.len() + 2 * (n.div_ceil(chunk) as usize + 1);
    for _ in 0..tasks {
        let done = pool.pop_finished().unwrap();
        assert!(
            matches!(done.outcome, Outcome::Ran { .. }),
            "{how}: {done:?}"
        );
    }
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
    for ((a, b), c) in inputs.iter().zip(&c) {
        assert_eq!(bits(c), bits(&reference::sgemm64(a, b)), "{how}: sgemm64");
    }
    let mut want = initial;
    let mut want_labels = Vec::new();
    for _ in 0..2 {
        want_labels = reference::kmeans_pool_iteration(&points, &mut want);
    }
    assert_ne!(
        bits(&want),
        bits(&points[..2 * k as usize]),
        "{how}: the centroids moved"
    );
    assert_eq!(bits(&centroids), bits(&want), "{how}: centroids");
    assert_eq!(labels, want_labels, "{how}: labels");
}

/// The launch baselines of `suite/examples/pool_workloads.rs` (the same
/// bodies under the hardware's block index) on the CPU backend: a product
/// per launch, a batched launch, and two k-means iterations as launches.
#[test]
fn the_launch_baselines_match_the_reference() {
    let launch = |blocks: u32, body: &(dyn Fn() + Sync)| {
        let launch = CpuLaunch {
            grid: [blocks, 1, 1],
            block: [THREADS, 1, 1],
            dynamic_shared_bytes: 0,
            resident_blocks: 2,
        };
        run(&Machine::new(2), &launch, &mut NoObserver, body).expect("the launch runs");
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let a: Vec<f32> = (0..2 * 64 * 64)
        .map(|i| ((i * 7) % 13) as f32 * 0.3 - 1.7)
        .collect();
    let b: Vec<f32> = (0..2 * 64 * 64)
        .map(|i| ((i * 5) % 11) as f32 * 0.1 - 0.45)
        .collect();
    let want: Vec<f32> = (0..2)
        .flat_map(|m| {
            let at = m * 64 * 64..(m + 1) * 64 * 64;
            reference::sgemm64(&a[at.clone()], &b[at])
        })
        .collect();
    let mut one = vec![f32::NAN; 64 * 64];
    let (pa, pb, pc) = (
        a.as_ptr() as usize,
        b.as_ptr() as usize,
        one.as_mut_ptr() as usize,
    );
    // SAFETY: three 64x64 matrices.
    launch(SGEMM64_CTAS, &|| unsafe {
        sgemm64_launch(pa as *const f32, pb as *const f32, pc as *mut f32)
    });
    assert_eq!(bits(&one), bits(&want[..64 * 64]), "sgemm64_launch");
    let mut batched = vec![f32::NAN; 2 * 64 * 64];
    let pc = batched.as_mut_ptr() as usize;
    // SAFETY: two 64x64 matrices each.
    launch(2 * SGEMM64_CTAS, &|| unsafe {
        sgemm64_batched(pa as *const f32, pb as *const f32, pc as *mut f32, 2)
    });
    assert_eq!(bits(&batched), bits(&want), "sgemm64_batched");

    let (n, k) = (700u32, 3u32);
    let points: Vec<f32> = (0..2 * n)
        .map(|i| ((i * 29 + i / 2 * 3) % 89) as f32 * 0.1)
        .collect();
    let mut centroids = points[..2 * k as usize].to_vec();
    let mut want = centroids.clone();
    let mut labels = vec![u32::MAX; n as usize];
    let subs = n.div_ceil(KMEANS_SUB);
    let mut partials = vec![0f32; (subs * k * 3) as usize];
    let (pp, pcen, pl, ppart) = (
        points.as_ptr() as usize,
        centroids.as_mut_ptr() as usize,
        labels.as_mut_ptr() as usize,
        partials.as_mut_ptr() as usize,
    );
    let mut want_labels = Vec::new();
    for _ in 0..2 {
        // SAFETY: n points, k centroids, n labels, one partial per block.
        launch(subs, &|| unsafe {
            kmeans_assign_launch(
                pp as *const f32,
                pcen as *const f32,
                pl as *mut u32,
                ppart as *mut f32,
                n,
                k,
            )
        });
        // SAFETY: `subs` partials of k clusters, k centroids.
        launch(1, &|| unsafe {
            kmeans_update_launch(ppart as *const f32, pcen as *mut f32, subs, k)
        });
        want_labels = reference::kmeans_pool_iteration(&points, &mut want);
    }
    assert_eq!(bits(&centroids), bits(&want), "centroids");
    assert_eq!(labels, want_labels, "labels");
}

/// A pool written by `task_pool!` (`kernels::pool::pool_generated`) serves
/// ordinary kernels: each task's output is bit for bit what a plain launch
/// of the same kernel writes on the CPU backend. `vector_add` runs over
/// several CTAs (its `index_1d` reads the task's CTA), `ragged_sum` returns
/// early in some threads before barriers over shared memory (and adds its
/// block index), and `accumulate` (`c += a`) would show a task run twice.
///
/// Also under shuffled thread orders with the race detector on: the task
/// barrier protocol of `ragged_sum` must hold whichever thread runs first.
#[test]
fn a_generated_pool_runs_ordinary_kernels_as_their_launches_do() {
    // Beside a publishing warp too: `ragged_sum`'s task protocol counts the
    // task's threads only; blocks of 48 threads (not whole warps) get none
    // and count their barriers over all 48.
    for (threads, warp) in [(THREADS, false), (THREADS, true), (48, true)] {
        generated_pool_matches_launches(Machine::new(2), threads, warp);
        for seed in [1, 7, 42] {
            let machine = Machine::new(2).interleave(seed).check_races(true);
            generated_pool_matches_launches(machine, threads, warp);
        }
    }
}

fn generated_pool_matches_launches(machine: Machine, threads: u32, warp: bool) {
    let config = PoolConfig::new(pool_generated::KINDS)
        .blocks(4)
        .block_threads(threads)
        .timeout(Duration::from_secs(60));
    let config = with_warp(config, "pool_generated", warp);
    let pool = TaskPool::cpu(machine.clone(), 3, pool_generated, config).expect("the pool starts");
    assert_eq!(pool.publishing_warp(), warp && threads.is_multiple_of(32));
    let launch = |ctas: u32| CpuLaunch {
        grid: [ctas, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
        resident_blocks: 2,
    };
    let ctas = |n: u32| n.div_ceil(threads);

    // vector_add: n = 1000 (32 CTAs, the last partial).
    let n = 1000u32;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 3.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 1.5).collect();
    let mut sum_task = vec![f32::NAN; n as usize];
    let mut sum_launch = vec![f32::NAN; n as usize];
    // ragged_sum: 200 elements (7 CTAs), CTA 2 ragged.
    let m = 200u32;
    let input: Vec<u32> = (0..m).map(|i| i.wrapping_mul(2654435761) % 1000).collect();
    let mut ragged_task = vec![u32::MAX; m as usize];
    let mut ragged_launch = vec![u32::MAX; m as usize];
    // accumulate: c += a, three times over one buffer, in order.
    let mut acc_task: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut acc_launch = acc_task.clone();

    let first = pool
        .push(pool_generated::task(
            ctas(n),
            vector_add_args {
                a: a.as_ptr() as u64,
                b: b.as_ptr() as u64,
                c: sum_task.as_mut_ptr() as u64,
                n,
            },
        ))
        .unwrap();
    let second = pool
        .push(pool_generated::task(
            ctas(m),
            ragged_sum_args {
                input: input.as_ptr() as u64,
                output: ragged_task.as_mut_ptr() as u64,
                n: m,
                ragged: 2,
            },
        ))
        .unwrap();
    let accumulate_task = pool_generated::task(
        ctas(n),
        accumulate_args {
            a: a.as_ptr() as u64,
            c: acc_task.as_mut_ptr() as u64,
            n,
        },
    );
    assert_eq!(
        accumulate_task.kind(),
        2,
        "the kind is the place in the list"
    );
    let mut last = pool.push(accumulate_task).unwrap();
    for _ in 0..2 {
        last = pool.push_after(accumulate_task, &[last]).unwrap();
    }
    let mut finished: Vec<Finished> = (0..5).map(|_| pool.pop_finished().unwrap()).collect();
    assert_eq!(pool.pop_finished(), Err(PoolError::NothingUnfinished));
    finished.sort_by_key(|f| f.ticket);
    assert_eq!(finished[0].ticket, first);
    assert_eq!(finished[1].ticket, second);
    assert_eq!(
        finished.iter().map(|f| f.kind).collect::<Vec<_>>(),
        [0, 1, 2, 2, 2]
    );
    assert!(finished
        .iter()
        .all(|f| f.outcome == Outcome::Ran { result: 0 }));
    pool.shutdown(Shutdown::Drain).unwrap();

    let options = ClusterOptions::default();
    // SAFETY: each kernel's buffers hold its `n` elements.
    unsafe {
        launch_entry(
            vector_add::KERNEL,
            &machine,
            launch(ctas(n)),
            &options,
            &mut NoObserver,
            (&a, &b, &mut sum_launch, n),
        )
        .unwrap();
        launch_entry(
            ragged_sum::KERNEL,
            &machine,
            launch(ctas(m)),
            &options,
            &mut NoObserver,
            (&input, &mut ragged_launch, m, 2),
        )
        .unwrap();
        for _ in 0..3 {
            launch_entry(
                accumulate::KERNEL,
                &machine,
                launch(ctas(n)),
                &options,
                &mut NoObserver,
                (&a, &mut acc_launch, n),
            )
            .unwrap();
        }
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&sum_task), bits(&sum_launch));
    assert!(sum_task.iter().all(|x| !x.is_nan()), "every CTA ran");
    assert_eq!(ragged_task, ragged_launch);
    // The ragged CTA's upper half returned at once: left as it was.
    assert_eq!(
        ragged_task[2 * threads as usize + threads as usize / 2],
        u32::MAX
    );
    assert_ne!(ragged_task[2 * threads as usize], u32::MAX);
    assert_eq!(bits(&acc_task), bits(&acc_launch));
}

/// A generated pool whose task waits at a barrier and reads its block's
/// size (`pool_barriers`: `rotate_in_blocks`, whose `sync_threads()`,
/// `block_dim_x()` and `index_1d()` `task_pool!` rewrites to the task's
/// CTA, for a publishing warp on the GPU) gives what its launch gives, on
/// blocks of 32 and 48 threads, in order and under shuffled interleavings
/// with the race check on.
#[test]
fn a_generated_task_at_its_cta_barrier_runs_as_its_launch_does() {
    use kernels::pool::{pool_barriers, rotate_in_blocks, rotate_in_blocks_args};
    // Beside a publishing warp where the task threads are whole warps (48
    // threads, asked for one, get none).
    for (threads, warp) in [(THREADS, false), (THREADS, true), (48, true)] {
        for machine in [
            Machine::new(2),
            Machine::new(2).interleave(7).check_races(true),
        ] {
            let config = PoolConfig::new(pool_barriers::KINDS)
                .blocks(3)
                .block_threads(threads)
                .timeout(Duration::from_secs(60));
            let config = with_warp(config, "pool_barriers", warp);
            let pool = TaskPool::cpu(machine.clone(), 3, pool_barriers, config).unwrap();
            assert_eq!(pool.publishing_warp(), warp && threads.is_multiple_of(32));
            // 7 CTAs, the last partial.
            let n = 6 * threads + threads / 3;
            let input: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2654435761)).collect();
            let mut by_task = vec![u32::MAX; n as usize];
            let mut by_launch = vec![u32::MAX; n as usize];
            pool.push(pool_barriers::task(
                n.div_ceil(threads),
                rotate_in_blocks_args {
                    input: input.as_ptr() as u64,
                    output: by_task.as_mut_ptr() as u64,
                    n,
                },
            ))
            .unwrap();
            let done = pool.pop_finished().unwrap();
            assert_eq!(done.outcome, Outcome::Ran { result: 0 });
            pool.shutdown(Shutdown::Drain).unwrap();
            let launch = CpuLaunch {
                grid: [n.div_ceil(threads), 1, 1],
                block: [threads, 1, 1],
                dynamic_shared_bytes: 0,
                resident_blocks: 2,
            };
            // SAFETY: both buffers hold `n` elements.
            unsafe {
                launch_entry(
                    rotate_in_blocks::KERNEL,
                    &machine,
                    launch,
                    &ClusterOptions::default(),
                    &mut NoObserver,
                    (&input, &mut by_launch, n),
                )
                .unwrap();
            }
            assert_eq!(by_task, by_launch, "{threads} threads, warp {warp}");
            assert_eq!(
                by_task,
                clustered_suite::reference::rotate_in_blocks(&input, threads as usize),
                "{threads} threads"
            );
        }
    }
}

/// A kind past the generated pool's list (the host told it serves more)
/// comes back as `Outcome::UnknownKind`, nothing run.
#[test]
fn a_generated_pool_refuses_a_kind_past_its_list() {
    let config = PoolConfig::new(pool_generated::KINDS + 1)
        .blocks(2)
        .block_threads(THREADS)
        .timeout(Duration::from_secs(60));
    let pool = TaskPool::cpu(Machine::new(1), 3, pool_generated, config).unwrap();
    let ticket = pool
        .push(Task::new(pool_generated::KINDS, 1, 0u32))
        .unwrap();
    let done = pool.pop_finished().unwrap();
    assert_eq!((done.ticket, done.outcome), (ticket, Outcome::UnknownKind));
    assert_eq!(
        pool_generated::TASKS,
        [
            "crate::vector::vector_add",
            "crate::early_exit::ragged_sum",
            "crate::vector::accumulate"
        ]
    );
    pool.shutdown(Shutdown::Drain).unwrap();
}

/// A pool's tasks read the constant tables written on the thread that
/// started it (`kernels::pool::pool_tables`), as they are then: the
/// engine's blocks run on a thread of their own.
#[test]
fn a_pool_s_tasks_read_the_constant_tables_written_before_it_started() {
    use kernels::pool::pool_tables;
    use kernels::vector::{polynomial_args, COEFFICIENTS};
    let table: Vec<f32> = (0..COEFFICIENTS.len())
        .map(|k| (k % 7) as f32 * 0.25 - 0.5)
        .collect();
    clustered_host::cpu::write_constant(COEFFICIENTS, &table).unwrap();
    let config = PoolConfig::new(pool_tables::KINDS)
        .blocks(2)
        .block_threads(THREADS)
        .timeout(Duration::from_secs(60));
    let config = with_warp(config, "pool_tables", true);
    let pool = TaskPool::cpu(Machine::new(2), 3, pool_tables, config).unwrap();
    // Written after the start: not what the tasks read.
    clustered_host::cpu::write_constant(COEFFICIENTS, &[0.0; 64]).unwrap();
    let n = 100u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 / 50.0 - 1.0).collect();
    let mut y = vec![f32::NAN; n as usize];
    let args = polynomial_args {
        x: x.as_ptr() as u64,
        y: y.as_mut_ptr() as u64,
        n,
        degree: 9,
    };
    pool.push(pool_tables::task(n.div_ceil(THREADS), args))
        .unwrap();
    let done = pool.pop_finished().unwrap();
    assert_eq!(done.outcome, Outcome::Ran { result: 0 });
    pool.shutdown(Shutdown::Drain).unwrap();
    let want: Vec<f32> = x
        .iter()
        .map(|&x| {
            table[..9]
                .iter()
                .rev()
                .fold(0.0f32, |v, &c| v.mul_add(x, c))
        })
        .collect();
    assert_eq!(y, want);
}

fn order_task(counter: &AtomicU32, order: &[AtomicU32], index: u32) -> Task {
    Task::new(
        ORDER,
        1,
        Order {
            counter: counter.as_ptr() as u64,
            order: order.as_ptr() as u64,
            index,
        },
    )
}

fn step_task(buf: &[AtomicU32], seen: &[AtomicU32], index: u32) -> Task {
    Task::new(
        STEP,
        1,
        Step {
            buf: buf.as_ptr() as u64,
            seen: seen.as_ptr() as u64,
            index,
        },
    )
}

/// The tasks in the pool's rings as (block, ticket, state), in ticket
/// order.
fn in_rings(pool: &TaskPool) -> Vec<(u32, Ticket, &'static str)> {
    let mut held: Vec<_> = pool
        .in_rings()
        .iter()
        .map(|s| (s.slot, s.ticket, s.state))
        .collect();
    held.sort_by_key(|&(_, ticket, _)| ticket);
    held
}

/// Polls until the rings hold `count` tasks (the scheduler moves pushed
/// tasks asynchronously); returns them.
fn await_in_rings(pool: &TaskPool, count: usize) -> Vec<(u32, Ticket, &'static str)> {
    for _ in 0..10_000 {
        let held = in_rings(pool);
        if held.len() == count {
            return held;
        }
        thread::sleep(Duration::from_micros(500));
    }
    panic!("the rings never held {count} tasks: {:?}", in_rings(pool));
}

/// Pushes a WAIT on `flag`, waits until it holds its block, and pushes a
/// chain of `seen.len()` STEP tasks behind it; returns the WAIT and the
/// steps.
fn chain_behind_a_wait(
    pool: &TaskPool,
    flag: &AtomicU32,
    buf: &[AtomicU32],
    seen: &[AtomicU32],
) -> (Ticket, Vec<Ticket>) {
    let started = AtomicU32::new(0);
    let head = pool.push(wait_started(flag, &started)).unwrap();
    await_one(&started);
    let mut last = head;
    let steps = (0..seen.len() as u32)
        .map(|i| {
            last = pool.push_after(step_task(buf, seen, i), &[last]).unwrap();
            last
        })
        .collect();
    (head, steps)
}

/// Waits until the rings hold a ring-full, and checks it is `head`'s block's
/// ring: `head`, then the first steps in order. Returns that block.
fn assert_ring_full_of_chain(pool: &TaskPool, head: Ticket, steps: &[Ticket]) -> u32 {
    let held = await_in_rings(pool, RING_ENTRIES);
    let block = held[0].0;
    assert_eq!(held[0].1, head);
    assert!(held.iter().all(|&(b, _, _)| b == block), "{held:?}");
    assert_eq!(
        &held[1..].iter().map(|h| h.1).collect::<Vec<_>>(),
        &steps[..RING_ENTRIES - 1]
    );
    block
}

/// Idle blocks get work first: four WAIT tasks pushed one after the other
/// all start (a second one in a ring would wait behind the first), and eight
/// tasks pushed while they hold the blocks go two into each ring, where each
/// block runs its ring in the order the host filled it.
#[test]
fn idle_blocks_get_work_first_and_each_ring_runs_in_order() {
    let pool = pool(2, Duration::from_secs(60));
    assert_eq!(pool.slots(), 4);
    assert_eq!(pool.depth(), DEFAULT_DEPTH);
    let flag = AtomicU32::new(0);
    let started = counters(4);
    // One at a time, each after the previous holds its block: the scheduler
    // must choose an idle block for each.
    let waits: Vec<Ticket> = started
        .iter()
        .map(|s| {
            let ticket = pool.push(wait_started(&flag, s)).unwrap();
            await_one(s);
            ticket
        })
        .collect();
    let held = await_in_rings(&pool, 4);
    let mut blocks: Vec<u32> = held.iter().map(|&(b, _, _)| b).collect();
    blocks.sort();
    assert_eq!(blocks, [0, 1, 2, 3], "one WAIT per block: {held:?}");
    let counter = AtomicU32::new(0);
    let order = counters(8);
    let tickets: Vec<Ticket> = (0..8)
        .map(|i| pool.push(order_task(&counter, &order, i)).unwrap())
        .collect();
    let held = await_in_rings(&pool, 12);
    for b in 0..4 {
        let queued = held
            .iter()
            .filter(|&&(block, ticket, _)| block == b && tickets.contains(&ticket))
            .count();
        assert_eq!(queued, 2, "block {b} got two of the eight: {held:?}");
    }
    assert_eq!(counter.load(Ordering::Relaxed), 0, "none ran past a WAIT");
    flag.store(1, Ordering::Release);
    let mut done: Vec<Finished> = (0..12).map(|_| pool.pop_finished().unwrap()).collect();
    done.sort_by_key(|f| f.ticket);
    assert!(done[..4].iter().all(|f| waits.contains(&f.ticket)));
    // Per block, the tasks ran in ticket order (the order the host put them
    // into the ring).
    let mut last_run = [None::<u32>; 4];
    for (i, f) in done[4..].iter().enumerate() {
        let Outcome::Ran { result: block } = f.outcome else {
            panic!("{f:?}");
        };
        let ran = order[i].load(Ordering::Relaxed);
        let last = &mut last_run[block as usize];
        assert!(
            last.is_none_or(|l| l < ran),
            "block {block} ran task {i} out of order"
        );
        *last = Some(ran);
    }
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

/// A chain (each STEP pushed after the previous) behind a task that holds
/// its block goes into that block's ring: the ring fills up behind it (not
/// the other, idle blocks), every step runs on that block, after its
/// predecessor, and reads what the previous step's threads wrote.
#[test]
fn a_chain_runs_in_one_ring_each_step_after_the_previous() {
    const STEPS: u32 = 100;
    let pool = pool(2, Duration::from_secs(60));
    let buf = counters(THREADS as usize);
    let seen: Vec<AtomicU32> = (0..STEPS).map(|_| AtomicU32::new(u32::MAX)).collect();
    let flag = AtomicU32::new(0);
    let (head, steps) = chain_behind_a_wait(&pool, &flag, &buf, &seen);
    // The ring of the head's block is full: the head and the first steps,
    // nothing on the three idle blocks.
    let block = assert_ring_full_of_chain(&pool, head, &steps);
    flag.store(1, Ordering::Release);
    let mut done: Vec<Finished> = (0..=STEPS).map(|_| pool.pop_finished().unwrap()).collect();
    done.sort_by_key(|f| f.ticket);
    assert_eq!(done[0].ticket, head);
    for (i, f) in done[1..].iter().enumerate() {
        assert_eq!(f.ticket, steps[i]);
        let Outcome::Ran { result } = f.outcome else {
            panic!("{f:?}");
        };
        assert_eq!(result >> 32, block as u64, "step {i} left the ring");
        assert_eq!(
            result & 0xffff_ffff,
            i as u64,
            "step {i} ran before step {}",
            i as i64 - 1
        );
        assert_eq!(seen[i].load(Ordering::Relaxed), i as u32);
    }
    assert!(
        buf.iter().all(|b| b.load(Ordering::Relaxed) == STEPS),
        "every thread's last write is the last step's"
    );
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

/// The same chain pushed while the pool runs (a step's predecessor may have
/// finished before the scheduler sees it: then it runs anywhere), on shuffled
/// thread orders with the race detector on: a step still reads what the
/// previous step's threads wrote, whether the barrier at the end of a task
/// or the host's release and acquire ordered them.
#[test]
fn a_chain_pushed_while_running_stays_in_order_under_the_race_detector() {
    const STEPS: u32 = 40;
    for (seed, warp) in [(3, false), (11, false), (3, true), (11, true)] {
        let config = PoolConfig::new(KINDS)
            .blocks(4)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60));
        let config = with_warp(config, "pool_demo", warp);
        let machine = Machine::new(2).interleave(seed).check_races(true);
        let pool = TaskPool::cpu(machine, 3, pool_demo, config).unwrap();
        let buf = counters(THREADS as usize);
        let seen: Vec<AtomicU32> = (0..STEPS).map(|_| AtomicU32::new(u32::MAX)).collect();
        let mut last: Option<Ticket> = None;
        for i in 0..STEPS {
            let after: Vec<Ticket> = last.into_iter().collect();
            last = Some(pool.push_after(step_task(&buf, &seen, i), &after).unwrap());
        }
        for _ in 0..STEPS {
            let f = pool.pop_finished().unwrap();
            assert!(matches!(f.outcome, Outcome::Ran { .. }), "{f:?}");
        }
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
        for (i, s) in seen.iter().enumerate() {
            assert_eq!(s.load(Ordering::Relaxed), i as u32, "seed {seed}: step {i}");
        }
        assert!(buf.iter().all(|b| b.load(Ordering::Relaxed) == STEPS));
    }
}

/// A dependency pushed on one thread runs before its dependent pushed on
/// another right after (the ticket passed over a channel), while a third
/// thread keeps the scheduler taking pushes: the threads push into
/// different shards of the inbox, and the scheduler must never take the
/// dependent without the dependency (it takes every shard under all their
/// locks at once).
#[test]
fn a_dependency_pushed_on_another_thread_runs_first() {
    const PAIRS: u32 = 400;
    const FILLERS: u32 = 800;
    let pool = pool(2, Duration::from_secs(60));
    let counter = AtomicU32::new(0);
    let order = counters(2 * PAIRS as usize + FILLERS as usize);
    let (send, receive) = std::sync::mpsc::channel::<(u32, Ticket)>();
    thread::scope(|scope| {
        let (pool, counter, order) = (&pool, &counter, &order);
        scope.spawn(move || {
            for i in 0..PAIRS {
                let first = pool.push(order_task(counter, order, 2 * i)).unwrap();
                send.send((i, first)).unwrap();
            }
        });
        scope.spawn(move || {
            for (i, first) in receive {
                pool.push_after(order_task(counter, order, 2 * i + 1), &[first])
                    .unwrap();
            }
        });
        scope.spawn(move || {
            for i in 0..FILLERS {
                pool.push(order_task(counter, order, 2 * PAIRS + i))
                    .unwrap();
            }
        });
    });
    for _ in 0..2 * PAIRS + FILLERS {
        let f = pool.pop_finished().unwrap();
        assert!(matches!(f.outcome, Outcome::Ran { .. }), "{f:?}");
    }
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
    for i in 0..PAIRS as usize {
        let (first, second) = (
            order[2 * i].load(Ordering::Relaxed),
            order[2 * i + 1].load(Ordering::Relaxed),
        );
        assert!(
            first < second,
            "pair {i}: the dependent ran {second}th, its dependency {first}th"
        );
    }
}

/// A publisher with fewer threads than rings (two threads, seven rings:
/// each thread watches several workers' words) still publishes every task
/// exactly once, independent tasks from two producers and a chain riding
/// in one ring alike, on shuffled thread orders with the race detector on.
#[test]
fn a_publisher_with_fewer_threads_than_rings_publishes_every_task_once() {
    const TASKS: u32 = 120;
    const STEPS: u32 = 24;
    for seed in [5, 17] {
        let config = PoolConfig::new(KINDS)
            .blocks(7)
            .block_threads(2)
            .timeout(Duration::from_secs(60));
        let machine = Machine::new(4).interleave(seed).check_races(true);
        let pool = TaskPool::cpu(machine, 2, pool_demo, config).unwrap();
        let runs = counters((TASKS + STEPS) as usize);
        thread::scope(|scope| {
            for producer in 0..2 {
                let (pool, runs) = (&pool, &runs);
                scope.spawn(move || {
                    for i in (producer..TASKS).step_by(2) {
                        pool.push(mark(runs, i)).unwrap();
                    }
                });
            }
        });
        let mut last: Option<Ticket> = None;
        for i in TASKS..TASKS + STEPS {
            let after: Vec<Ticket> = last.into_iter().collect();
            last = Some(pool.push_after(mark(&runs, i), &after).unwrap());
        }
        let mut results: Vec<u64> = (0..TASKS + STEPS)
            .map(|_| match pool.pop_finished().unwrap().outcome {
                Outcome::Ran { result } => result,
                other => panic!("seed {seed}: {other:?}"),
            })
            .collect();
        results.sort_unstable();
        assert_eq!(results, (0..u64::from(TASKS + STEPS)).collect::<Vec<_>>());
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(r.load(Ordering::Relaxed), 1, "seed {seed}: task {i}");
        }
    }
}

/// A pool of three blocks on each of two SMs (`blocks_per_sm`, the
/// publisher one of them) serves five rings, and runs every task once,
/// under random interleavings with the race detector; four per SM where
/// the kernel keeps three resident is refused.
#[test]
fn a_pool_of_several_blocks_per_sm_serves_them_all() {
    const TASKS: u32 = 60;
    let config = PoolConfig::new(KINDS)
        .blocks_per_sm(3)
        .block_threads(THREADS)
        .timeout(Duration::from_secs(60));
    for seed in [3, 29] {
        let machine = Machine::new(2).interleave(seed).check_races(true);
        let pool = TaskPool::cpu(machine, 3, pool_demo, config.clone()).unwrap();
        assert_eq!(pool.slots(), 5, "worker blocks");
        let runs = counters(TASKS as usize);
        for i in 0..TASKS {
            pool.push(mark(&runs, i)).unwrap();
        }
        let mut results: Vec<u64> = (0..TASKS)
            .map(|_| match pool.pop_finished().unwrap().outcome {
                Outcome::Ran { result } => result,
                other => panic!("seed {seed}: {other:?}"),
            })
            .collect();
        results.sort_unstable();
        assert_eq!(results, (0..u64::from(TASKS)).collect::<Vec<_>>());
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
        for (i, r) in runs.iter().enumerate() {
            assert_eq!(r.load(Ordering::Relaxed), 1, "seed {seed}: task {i}");
        }
    }
    let too_many = TaskPool::cpu(Machine::new(2), 3, pool_demo, config.blocks_per_sm(4));
    assert!(
        matches!(
            too_many,
            Err(PoolError::TooLarge {
                blocks: 8,
                resident: 6
            })
        ),
        "{:?}",
        too_many.err()
    );
}

/// Of the tasks pushed after one task, only the first rides behind it in
/// its ring. Without gates the others wait for it on the host and then
/// spread; with gates (the default) they go into other blocks' rings at
/// once, gated on its counter, and still run only after it.
#[test]
fn only_the_first_dependent_of_a_task_rides_behind_it() {
    for gates in [false, true] {
        let config = PoolConfig::new(KINDS)
            .blocks(4)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60))
            .gates(gates);
        let pool = TaskPool::cpu(Machine::new(2), 3, pool_demo, config).unwrap();
        let (flag, started) = (AtomicU32::new(0), AtomicU32::new(0));
        let head = pool.push(wait_started(&flag, &started)).unwrap();
        await_one(&started);
        let counter = AtomicU32::new(0);
        let order = counters(3);
        let fan: Vec<Ticket> = (0..3)
            .map(|i| {
                pool.push_after(order_task(&counter, &order, i), &[head])
                    .unwrap()
            })
            .collect();
        let held = await_in_rings(&pool, if gates { 4 } else { 2 });
        assert_eq!((held[0].1, held[0].2), (head, "RUNNING"));
        assert_eq!(
            (held[1].0, held[1].1, held[1].2),
            (held[0].0, fan[0], "READY")
        );
        if gates {
            // The other two wait on other blocks.
            for h in &held[2..] {
                assert_ne!(h.0, held[0].0, "{held:?}");
            }
        }
        // Nothing after the head runs while it runs.
        thread::sleep(Duration::from_millis(20));
        assert_eq!(in_rings(&pool).len(), held.len());
        assert_eq!(counter.load(Ordering::Relaxed), 0, "gates {gates}");
        assert_eq!(pool.unfinished(), 4);
        flag.store(1, Ordering::Release);
        let mut done: Vec<Finished> = (0..4).map(|_| pool.pop_finished().unwrap()).collect();
        done.sort_by_key(|f| f.ticket);
        assert_eq!(done[0].ticket, head);
        assert_eq!(counter.load(Ordering::Relaxed), 3);
        assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
    }
}

/// Shutdown with rings partly full: two blocks held by WAIT tasks, each with
/// `depth - 1` MARK tasks behind it, and more on the host. Drain runs
/// every task; Cancel runs those in rings (the device owns them) and cancels
/// those on the host. Either way every task comes back once, a task that
/// finished before and was not popped included, and what ran is exactly
/// what says `Ran`.
#[test]
fn shutdown_with_rings_partly_full_loses_nothing() {
    for (mode, warp) in [
        (Shutdown::Drain, false),
        (Shutdown::Cancel, false),
        (Shutdown::Drain, true),
        (Shutdown::Cancel, true),
    ] {
        let config = PoolConfig::new(KINDS)
            .blocks(2)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60));
        let config = with_warp(config, "pool_demo", warp);
        let pool = TaskPool::cpu(Machine::new(1), 3, pool_demo, config).unwrap();
        // Finished and never popped.
        let early = pool.push(Task::new(EMPTY, 1, 7u32)).unwrap();
        // Bounded: a pool whose device failed never finishes it.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while pool.unfinished() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{mode:?}, warp {warp}: the first task never finished"
            );
            thread::sleep(Duration::from_micros(200));
        }
        let flag = AtomicU32::new(0);
        let started = counters(2);
        let waits: Vec<Ticket> = started
            .iter()
            .map(|s| pool.push(wait_started(&flag, s)).unwrap())
            .collect();
        started.iter().for_each(await_one);
        let in_ring = 2 * (pool.depth() as usize - 1);
        let marks = in_ring + 10;
        let runs = counters(marks);
        let queued: Vec<Ticket> = (0..marks as u32)
            .map(|i| pool.push(mark(&runs, i)).unwrap())
            .collect();
        await_in_rings(&pool, 2 + in_ring);
        let rest = thread::scope(|scope| {
            scope.spawn(|| {
                thread::sleep(Duration::from_millis(50));
                flag.store(1, Ordering::Release);
            });
            pool.shutdown(mode).unwrap()
        });
        assert_eq!(rest.len(), 1 + 2 + marks, "{mode:?}: every task once");
        let outcome = |t: Ticket| rest.iter().find(|f| f.ticket == t).unwrap().outcome;
        assert_eq!(outcome(early), Outcome::Ran { result: 7 });
        for t in waits {
            assert_eq!(outcome(t), Outcome::Ran { result: 1 });
        }
        let mut ran = 0;
        for (i, &t) in queued.iter().enumerate() {
            let count = runs[i].load(Ordering::Relaxed);
            match outcome(t) {
                Outcome::Ran { result } => {
                    assert_eq!((result, count), (i as u64, 1), "{mode:?}");
                    ran += 1;
                }
                Outcome::Cancelled => assert_eq!(count, 0, "{mode:?}: a cancelled task ran"),
                other => panic!("{mode:?}: {other:?}"),
            }
        }
        let want = if mode == Shutdown::Drain {
            marks
        } else {
            in_ring
        };
        assert_eq!(ran, want, "{mode:?}");
    }
}

/// How the blocks of `exit_spy` found their rings when they left.
static SPY_EXITS: AtomicU32 = AtomicU32::new(0);
static SPY_BAD: AtomicU32 = AtomicU32::new(0);
/// Rings of the spied pool (the publisher is the block after them).
const SPY_RINGS: usize = 4;

/// `pool_demo`, then (thread 0 of each block) a look at the block's ring:
/// the host writes EXIT only when every task of the ring was collected, so
/// exactly one entry is EXIT and every other one IDLE.
unsafe fn exit_spy(slots: *mut Slot) {
    unsafe { pool_demo(slots) };
    if clustered_device::thread::thread_idx_x() != 0 {
        return;
    }
    // A worker may not read the hardware block index once it served (the
    // CPU backend stops it): the pool's own word for it.
    let block = clustered_device::pool::resident_block() as usize;
    if block == SPY_RINGS {
        // The publisher: no ring of its own.
        return;
    }
    let ring = slots.wrapping_add(block * RING_ENTRIES);
    let states: Vec<u32> = (0..RING_ENTRIES)
        .map(|e| unsafe {
            AtomicU32::from_ptr(std::ptr::addr_of_mut!((*ring.add(e)).state))
                .load(Ordering::Acquire)
        })
        .collect();
    let exits = states.iter().filter(|&&s| s == EXIT).count();
    let idle = states.iter().filter(|&&s| s == IDLE).count();
    if exits != 1 || idle != RING_ENTRIES - 1 {
        SPY_BAD.fetch_add(1, Ordering::Relaxed);
    }
    SPY_EXITS.fetch_add(1, Ordering::Relaxed);
}

/// EXIT goes only into IDLE entries (the one each block reads next), after
/// every task of its ring was collected, however full the rings were when
/// the pool was shut down.
#[test]
fn exit_is_written_only_into_idle_entries() {
    for mode in [Shutdown::Drain, Shutdown::Cancel] {
        SPY_EXITS.store(0, Ordering::Relaxed);
        SPY_BAD.store(0, Ordering::Relaxed);
        let config = PoolConfig::new(KINDS)
            .blocks(SPY_RINGS as u32)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60));
        let pool = TaskPool::cpu(Machine::new(2), 3, exit_spy, config).unwrap();
        let flag = AtomicU32::new(0);
        let started = counters(4);
        for s in &started {
            pool.push(wait_started(&flag, s)).unwrap();
        }
        started.iter().for_each(await_one);
        let runs = counters(50);
        for i in 0..50 {
            pool.push(mark(&runs, i)).unwrap();
        }
        let rest = thread::scope(|scope| {
            scope.spawn(|| {
                thread::sleep(Duration::from_millis(20));
                flag.store(1, Ordering::Release);
            });
            pool.shutdown(mode).unwrap()
        });
        assert_eq!(rest.len(), 54, "{mode:?}");
        assert_eq!(
            SPY_EXITS.load(Ordering::Relaxed),
            4,
            "{mode:?}: each block left once"
        );
        assert_eq!(
            SPY_BAD.load(Ordering::Relaxed),
            0,
            "{mode:?}: a ring was not idle at EXIT"
        );
    }
}

/// A task is published FINISHED when it ends, not when the tasks run after
/// it in the same batch end: a blocker holds a block while a MARK and then
/// a WAIT ride behind it (so the block copies both at once when the blocker
/// ends), and the MARK must come out while the WAIT still runs. A block
/// that published a batch's tasks together would hold the MARK back for
/// as long as the WAIT runs: for ever, if what the WAIT waits for depends
/// on the MARK through the host.
#[test]
fn a_finished_task_is_not_held_back_by_the_next_one_in_its_batch() {
    let pool = pool(1, Duration::from_secs(60));
    let (hold, started, release) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
    let runs = counters(1);
    let blocker = pool.push(wait_started(&hold, &started)).unwrap();
    await_one(&started);
    let marked = pool.push_after(mark(&runs, 0), &[blocker]).unwrap();
    let waiting = pool.push_after(wait(&release), &[marked]).unwrap();
    let held = await_in_rings(&pool, 3);
    assert!(held.iter().all(|h| h.0 == held[0].0), "one ring: {held:?}");
    hold.store(1, Ordering::Release);
    let mut out: Vec<Ticket> = (0..2)
        .map(|_| {
            pool.pop_finished_timeout(Duration::from_secs(10))
                .expect("the MARK is published while the WAIT behind it runs")
                .ticket
        })
        .collect();
    out.sort();
    assert_eq!(out, [blocker, marked]);
    assert_eq!(runs[0].load(Ordering::Relaxed), 1);
    release.store(1, Ordering::Release);
    assert_eq!(pool.pop_finished().unwrap().ticket, waiting);
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

/// At `depth(1)` a block holds one ready task, but a chain behind a task
/// still fills its ring (its steps could run nowhere else first), while an
/// independent task pushed meanwhile waits for an idle block, not behind
/// the chain.
#[test]
fn a_chain_fills_its_ring_at_depth_one() {
    // More steps than a ring holds.
    const STEPS: u32 = RING_ENTRIES as u32 + 4;
    let config = PoolConfig::new(KINDS)
        .blocks(2)
        .block_threads(THREADS)
        .depth(1)
        .timeout(Duration::from_secs(60));
    let pool = TaskPool::cpu(Machine::new(1), 3, pool_demo, config).unwrap();
    let buf = counters(THREADS as usize);
    let seen: Vec<AtomicU32> = (0..STEPS).map(|_| AtomicU32::new(u32::MAX)).collect();
    let flag = AtomicU32::new(0);
    let (head, steps) = chain_behind_a_wait(&pool, &flag, &buf, &seen);
    assert_ring_full_of_chain(&pool, head, &steps);
    // An independent task goes to the other, idle block and runs while the
    // chain waits.
    let runs = counters(1);
    let alone = pool.push(mark(&runs, 0)).unwrap();
    let done = pool
        .pop_finished_timeout(Duration::from_secs(10))
        .expect("the independent task runs beside the held chain");
    assert_eq!(done.ticket, alone);
    flag.store(1, Ordering::Release);
    let mut rest: Vec<Ticket> = (0..=STEPS)
        .map(|_| pool.pop_finished().unwrap().ticket)
        .collect();
    rest.sort();
    assert_eq!(rest[0], head);
    assert_eq!(rest[1..], steps[..]);
    assert!((0..STEPS as usize).all(|i| seen[i].load(Ordering::Relaxed) == i as u32));
    assert_eq!(pool.shutdown(Shutdown::Drain), Ok(Vec::new()));
}

/// What a task body's helper that the macro cannot rewrite does: reads
/// the hardware block index (here the resident block's, not the task's).
fn hidden_block_index(cta: Cta) -> u32 {
    clustered_device::thread::block_idx_x() + cta.block_idx_x()
}

/// Holds block 1 of [`late_block_pool`] back until set.
static LET_BLOCK_1_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`pool_demo`]'s kinds, but block 1 starts only once the test lets it:
/// a block that is not resident when the pool starts, as when another pool
/// holds the SM it needs.
unsafe fn late_block_pool(slots: *mut Slot) {
    if clustered_device::thread::block_idx_x() == 1 {
        while !LET_BLOCK_1_START.load(Ordering::Acquire) {
            thread::sleep(Duration::from_millis(1));
        }
    }
    unsafe { pool_demo(slots) }
}

/// A pool whose blocks are not all resident would hang any task in a
/// missing block's ring (and every gate on it): the start waits for every
/// block's mark and, past the timeout, returns `NotResident` naming the
/// missing blocks and the fix; a block that starts afterwards leaves at
/// once (the abandoned pool's kernel ends).
#[test]
fn a_pool_whose_blocks_do_not_all_start_is_refused_with_the_blocks_named() {
    let config = PoolConfig::new(KINDS)
        .blocks(3)
        .block_threads(THREADS)
        .timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let Err(PoolError::NotResident {
        missing,
        blocks,
        waited,
    }) = TaskPool::cpu(Machine::new(4), 1, late_block_pool, config)
    else {
        panic!("a pool with a block that never started was handed out");
    };
    assert!(missing.contains(&1), "block 1 is missing: {missing:?}");
    // Block 0 started (the engine starts blocks in order: those after the
    // held one wait for it too).
    assert!(!missing.contains(&0), "block 0 started: {missing:?}");
    assert_eq!(blocks, 4);
    assert!(waited >= Duration::from_millis(300) && started.elapsed() < Duration::from_secs(30));
    let message = PoolError::NotResident {
        missing,
        blocks,
        waited,
    }
    .to_string();
    assert!(message.contains("did not start"), "{message}");
    assert!(message.contains("one pool per GPU at a time"), "{message}");
    // The late block starts, sees EXIT and leaves; so do the others.
    LET_BLOCK_1_START.store(true, Ordering::Release);
    // The same kernel with every block resident serves tasks.
    let pool = TaskPool::cpu(
        Machine::new(4),
        1,
        late_block_pool,
        PoolConfig::new(KINDS).blocks(3).block_threads(THREADS),
    )
    .unwrap();
    pool.push(Task::new(EMPTY, 1, 7u32)).unwrap();
    let done = pool.pop_finished().unwrap();
    assert!(
        matches!(done.outcome, Outcome::Ran { .. }),
        "{:?}",
        done.outcome
    );
}

/// A pool whose one kind calls [`hidden_block_index`]. On the GPU the
/// build's PTX check refuses it (`builder/src/ptx_check.rs`); here it runs
/// on the CPU backend only.
unsafe fn hidden_read_pool(slots: *mut Slot) {
    unsafe { serve(slots, 1, |_, cta| u64::from(hidden_block_index(cta))) }
}

/// A task body that reads its block index through a helper (where the
/// macro cannot rewrite it) would read the resident block's index: the CPU
/// backend stops the pool at the read, with an error that names it and the
/// fix, and a pop gets that error rather than a wrong result.
#[test]
fn a_task_reading_the_hardware_block_index_stops_the_pool_with_the_fix() {
    let config = PoolConfig::new(1)
        .blocks(2)
        .block_threads(THREADS)
        .timeout(Duration::from_secs(60));
    let pool = TaskPool::cpu(Machine::new(2), 3, hidden_read_pool, config).unwrap();
    pool.push(Task::new(0, 2, 0u32)).unwrap();
    let Err(PoolError::Device(why)) = pool.pop_finished() else {
        panic!("the pool ran a task that read the hardware block index");
    };
    assert!(
        why.contains("`block_idx_x()` read the hardware block index"),
        "{why}"
    );
    assert!(why.contains("pass the task's `Cta`"), "{why}");
}

/// A pool whose one kind waits at a plain `sync_threads()` (a hand-written
/// body, or a helper's: `task_pool!` cannot rewrite it), or reads the
/// block's size.
unsafe fn plain_barrier_pool(slots: *mut Slot) {
    unsafe {
        serve(slots, 2, |task, _| {
            if task.kind() == 0 {
                clustered_device::thread::sync_threads();
            } else {
                let _ = clustered_device::thread::block_dim_x();
            }
            0
        })
    }
}

/// Such a kernel run beside a publishing warp, which the build would not
/// mark: its plain barrier would hang the GPU's block and its read of the
/// block's size count the warp, so the CPU backend stops the pool there,
/// naming the call and the fix, and a pop gets that error.
#[test]
fn a_plain_barrier_or_block_size_beside_a_publishing_warp_stops_the_pool_with_the_fix() {
    for (kind, call) in [
        (0, "a plain `sync_threads()` at"),
        (1, "`block_dim_x()` read the block's size"),
    ] {
        let config = PoolConfig::new(2)
            .blocks(2)
            .block_threads(THREADS)
            .timeout(Duration::from_secs(60))
            .cpu_publishing_warp(true);
        let pool = TaskPool::cpu(Machine::new(2), 3, plain_barrier_pool, config).unwrap();
        pool.push(Task::new(kind, 1, 0u32)).unwrap();
        let Err(PoolError::Device(why)) = pool.pop_finished() else {
            panic!("kind {kind} ran beside a publishing warp");
        };
        assert!(why.contains(call), "{why}");
        assert!(why.contains("cpu_publishing_warp(false)"), "{why}");
    }
}

#[test]
fn shutdown_drains_pushes_the_scheduler_has_not_taken_in_yet() {
    // The scheduler takes in at most a pass's share of the pushes (128)
    // between its collections: a burst of many passes' worth, drained at
    // once, still runs every task once.
    let pool = pool(1, Duration::from_secs(60));
    let n = 2000;
    let runs = counters(n);
    let tasks: Vec<Task> = (0..n as u32).map(|i| mark(&runs, i)).collect();
    let tickets = pool.push_many(&tasks).unwrap();
    let rest = pool.shutdown(Shutdown::Drain).unwrap();
    let mut finished: Vec<Ticket> = rest.iter().map(|f| f.ticket).collect();
    finished.sort();
    assert_eq!(finished, tickets, "every pushed task comes out once");
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r.load(Ordering::Acquire), 1, "task {i} ran once");
    }
}

/// The CPU pool's speed that docs/BENCHMARKS.md ("The CPU backend's pool,
/// too") quotes: a 300-task chain and 300 independent tasks on 7 worker
/// blocks, then the CPU the idle pool uses over 2 s (Linux). It prints
/// (no timing is asserted) and checks that every task came out once:
/// `cargo test --release -p clustered-suite --test pool_cpu speed -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn speed_of_a_cpu_pool() {
    let config = PoolConfig::new(KINDS)
        .blocks(7)
        .block_threads(THREADS)
        .timeout(Duration::from_secs(60));
    let pool = TaskPool::cpu(Machine::new(4), 2, pool_demo, config).unwrap();
    let n = 300u32;
    let start = std::time::Instant::now();
    let mut last: Vec<Ticket> = Vec::new();
    let mut chain = Vec::new();
    for i in 0..n {
        let ticket = pool.push_after(Task::new(EMPTY, 1, i), &last).unwrap();
        chain.push(ticket);
        last = vec![ticket];
    }
    let popped: Vec<Ticket> = (0..n)
        .map(|_| pool.pop_finished().unwrap().ticket)
        .collect();
    let chained = start.elapsed() / n;
    assert_eq!(popped, chain, "the chain in order");
    let start = std::time::Instant::now();
    let tasks: Vec<Task> = (0..n).map(|i| Task::new(EMPTY, 1, i)).collect();
    let mut pushed = pool.push_many(&tasks).unwrap();
    let mut popped: Vec<Ticket> = (0..n)
        .map(|_| pool.pop_finished().unwrap().ticket)
        .collect();
    let independent = start.elapsed() / n;
    pushed.sort();
    popped.sort();
    assert_eq!(popped, pushed, "each once");
    let ticks = || {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let fields: Vec<u64> = stat
            .rsplit(')')
            .next()?
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        // utime and stime: fields 14 and 15 of the line, 12 and 13 here.
        Some(fields.get(11)? + fields.get(12)?)
    };
    let before = ticks();
    thread::sleep(Duration::from_secs(2));
    let idle = before.zip(ticks()).map(|(b, a)| a - b);
    eprintln!(
        "a chained task {chained:?}, an independent one {independent:?}; idle 2 s: {idle:?} clock ticks of CPU"
    );
}
