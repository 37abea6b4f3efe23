//! How agents claim tasks so that every original CTA runs exactly once,
//! whatever the dispatcher does (DESIGN.md section 3).
//!
//! An agent first takes chunks of its own cluster (the one of its SM) from a
//! per-cluster counter, then steals from the other clusters in ring order
//! (the clusters after its own, whose tasks neighbour its own). A counter
//! hands out disjoint ranges, and an agent stops only after every cluster
//! was found drained (by its own claims, or counted by the marks the agents
//! leave on the clusters they find drained), so each task runs once, also
//! when an SM gets no agent or SM ids are sparse.
//!
//! The claiming logic is generic over the counters so the host tests it with
//! simulated agents; the device runs it on global atomics.

use crate::mapping::Partition;

/// Per-cluster counters of claimed chunks: `next_chunk(cluster)` increments
/// the cluster's counter and returns its old value.
///
/// Counting chunks rather than tasks lets the device use `atom.inc`, which
/// ptxas leaves alone, instead of `atom.add`, which it warp-aggregates.
pub trait TaskCounters {
    /// Claims the next chunk of `cluster`: returns its index (chunks past
    /// the cluster's tasks mean it is drained).
    fn next_chunk(&self, cluster: u32) -> u32;

    /// How many clusters are counted drained.
    fn drained_count(&self) -> u32;

    /// Sets `cluster`'s drained mark; `true` if this call set it.
    fn set_mark(&self, cluster: u32) -> bool;

    /// Adds one to the count of drained clusters.
    fn count_drained(&self);

    /// Marks `cluster` drained and returns how many clusters are known
    /// drained: each cluster is counted once, by the first agent to mark
    /// it, so the count reaches the number of clusters with tasks only
    /// when all are drained. The count is read before the mark, so that
    /// on a GPU both round trips overlap; a count that misses a concurrent
    /// mark only delays the stop to the next claim.
    #[inline(always)]
    fn mark_drained(&self, cluster: u32) -> u32 {
        let known = self.drained_count();
        if self.set_mark(cluster) {
            self.count_drained();
            known + 1
        } else {
            known
        }
    }
}

/// `sm_id` folded into `0..bound` (`sm_id % bound`, and 0 for a zero bound).
///
/// SM ids are usually below the bound, so the remainder, a division, is only
/// computed for sparse ids; `checked_rem` keeps a panic path (which cost the
/// agent loop 8 registers) out of the kernel.
#[inline(always)]
pub fn fold_sm_id(sm_id: u32, bound: u32) -> u32 {
    if sm_id < bound {
        sm_id
    } else {
        sm_id.checked_rem(bound).unwrap_or(0)
    }
}

/// A range of tasks of one cluster: positions `first .. first + count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The cluster claimed from.
    pub cluster: u32,
    /// The first position in the cluster.
    pub first: u32,
    /// How many tasks (at most the chunk).
    pub count: u32,
}

/// One agent's claiming state: its home cluster and how far it has stolen.
#[derive(Clone, Copy, Debug)]
pub struct Claimer {
    home: u32,
    /// Clusters after `home` (in ring order) already found drained.
    drained: u32,
}

impl Claimer {
    /// An agent on SM `sm_id`: its home cluster is its SM id; SM ids beyond
    /// the clusters (sparse ids) start stealing at `sm_id % M`.
    #[inline(always)]
    pub fn new(sm_id: u32, clusters: u32) -> Self {
        Claimer {
            home: fold_sm_id(sm_id, clusters),
            drained: 0,
        }
    }

    /// Claims up to `chunk` tasks, or `None` once every cluster is drained.
    #[inline(always)]
    pub fn claim(
        &mut self,
        counters: &impl TaskCounters,
        partition: &Partition,
        chunk: u32,
    ) -> Option<Claim> {
        let clusters = partition.clusters;
        while self.drained < clusters {
            let cluster = self.next_cluster(clusters);
            let len = partition.cluster_len(cluster);
            if len > 0 {
                let first = counters.next_chunk(cluster) as u64 * chunk as u64;
                if first < len as u64 {
                    let first = first as u32;
                    let count = if len - first < chunk {
                        len - first
                    } else {
                        chunk
                    };
                    return Some(Claim {
                        cluster,
                        first,
                        count,
                    });
                }
                // At the end of a launch an agent found every cluster
                // drained with a claim on each in turn, an atomic round trip
                // per cluster (131 in a row on an H100: Black-Scholes'
                // agents at 0.80-0.88x of the kernel); the count of drained
                // clusters lets it stop once all are. Drained clusters are
                // not skipped while others hold tasks: a walk that passed
                // them at once stole sooner, and conv 5x5's agents went
                // from 0.71x to 0.64x of the kernel (H100,
                // docs/BENCHMARKS.md).
                if counters.mark_drained(cluster) >= partition.clusters_with_tasks() {
                    self.drained = clusters;
                    break;
                }
            }
            self.drained += 1;
        }
        None
    }

    /// The cluster to try next: `home + drained` in ring order
    /// (`drained < clusters`).
    #[inline(always)]
    fn next_cluster(&self, clusters: u32) -> u32 {
        let cluster = self.home + self.drained;
        if cluster >= clusters {
            cluster - clusters
        } else {
            cluster
        }
    }
}

/// The tail of a grid-stride loop, shared out by factoring (Flynn Hummel,
/// Schonberg and Flynn, "Factoring", CACM 1992): claims come in batches of
/// `agents`, each claim of a batch taking `ceil(left / (2 agents))` tasks
/// (at least one) of the `left` not yet given to an earlier batch. So each
/// batch hands out about half of what is left, the first claims are long
/// and the last ones single tasks: a block that ran slower than the others
/// finds the tail taken instead of holding the launch up, in
/// `log2(tasks / agents)` claims or so per block.
///
/// `ticket` is the claim's number (from one counter); returns the range
/// `first .. first + count` of the tail's `len` tasks it owns, or `None`
/// once the tail is handed out. The ranges of tickets `0, 1, 2, ...` tile
/// `0 .. len` in order, each task in exactly one.
#[inline(always)]
pub fn factoring_claim(ticket: u32, len: u32, agents: u32) -> Option<(u32, u32)> {
    let agents = agents.max(1);
    let (mut ticket, mut given) = (ticket, 0u32);
    loop {
        let left = len - given;
        if left == 0 {
            return None;
        }
        let size = batch_claim_size(left, agents);
        if ticket < agents {
            // Within this batch: `ticket * size` may pass `left` only in a
            // batch of single tasks or a short last one.
            let offset = u64::from(ticket) * u64::from(size);
            if offset >= u64::from(left) {
                return None;
            }
            let first = given + offset as u32;
            return Some((first, size.min(len - first)));
        }
        ticket -= agents;
        given += batch_handed(left, agents, size);
    }
}

/// How many tickets of [`factoring_claim`] own tasks (each later ticket
/// finds the tail handed out): for the host, which counts a block's claims.
pub fn factoring_claims(len: u32, agents: u32) -> u64 {
    let agents = agents.max(1);
    let (mut given, mut claims) = (0u32, 0u64);
    while given < len {
        let left = len - given;
        let size = batch_claim_size(left, agents);
        let handed = batch_handed(left, agents, size);
        claims += u64::from(handed.div_ceil(size));
        given += handed;
    }
    claims
}

/// The tasks of each claim in a batch of the factoring when `left > 0`
/// tasks are not yet handed out: `ceil(left / (2 agents))`, at least one.
#[inline(always)]
fn batch_claim_size(left: u32, agents: u32) -> u32 {
    left.div_ceil(agents.saturating_mul(2)).max(1)
}

/// The tasks a batch of `agents` claims of `size` hands out of `left`.
#[inline(always)]
fn batch_handed(left: u32, agents: u32, size: u32) -> u32 {
    (u64::from(agents) * u64::from(size)).min(u64::from(left)) as u32
}

/// Where the claimed tail of a grid-stride loop over `total` tasks on
/// `agents` blocks starts (`run::strided_then_claimed`): after half of each
/// block's whole rounds. The tail is `total - tail_start(total, agents)`.
#[inline(always)]
pub const fn tail_start(total: u32, agents: u32) -> u32 {
    total / agents / 2 * agents
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    /// Every ticket's range, in ticket order, until the first `None`.
    fn factored(len: u32, agents: u32) -> Vec<(u32, u32)> {
        (0..)
            .map_while(|t| factoring_claim(t, len, agents))
            .collect()
    }

    #[test]
    fn factoring_tiles_the_tail_in_order_with_halving_claims() {
        for agents in [1, 2, 3, 7, 132, 1056] {
            for len in [0, 1, 2, 5, 63, 64, 1000, 1056, 4097, 131_072, 262_144] {
                let claims = factored(len, agents);
                let mut next = 0;
                for &(first, count) in &claims {
                    assert_eq!(
                        first, next,
                        "len {len}, agents {agents}: a gap or an overlap"
                    );
                    assert!(count >= 1);
                    next = first + count;
                }
                assert_eq!(next, len, "len {len}, agents {agents}: tasks left over");
                // Sizes never grow, and the first is about half the tail
                // over the agents (at least one task).
                assert!(claims.windows(2).all(|w| w[1].1 <= w[0].1));
                if let Some(&(_, first)) = claims.first() {
                    assert_eq!(first, len.div_ceil(2 * agents).max(1).min(len));
                }
                // Past the tail, every later ticket finds nothing.
                let n = claims.len() as u32;
                assert_eq!(factoring_claims(len, agents), u64::from(n));
                for t in n..n + 2 * agents {
                    assert_eq!(factoring_claim(t, len, agents), None);
                }
            }
        }
    }

    #[test]
    fn factoring_takes_few_claims_per_agent() {
        // 124 tasks per block in the tail of Black-Scholes' grid-stride loop
        // on 2112 blocks: about log2(124) + 2 batches.
        let claims = factored(2112 * 124, 2112);
        assert!(claims.len() <= 2112 * 10, "{} claims", claims.len());
        assert_eq!(claims[0].1, 62);
    }

    /// Claim counters, drained marks and their count.
    struct Counters(Vec<AtomicU32>, Vec<AtomicU32>, AtomicU32);
    impl TaskCounters for Counters {
        fn next_chunk(&self, cluster: u32) -> u32 {
            self.0[cluster as usize].fetch_add(1, Ordering::Relaxed)
        }
        fn drained_count(&self) -> u32 {
            self.2.load(Ordering::Relaxed)
        }
        fn set_mark(&self, cluster: u32) -> bool {
            let bit = 1 << (cluster % 32);
            self.1[cluster as usize / 32].fetch_or(bit, Ordering::Relaxed) & bit == 0
        }
        fn count_drained(&self) {
            self.2.fetch_add(1, Ordering::Relaxed);
        }
    }

    impl Counters {
        fn new(clusters: u32) -> Counters {
            Counters(
                (0..clusters).map(|_| AtomicU32::new(0)).collect(),
                (0..clusters.div_ceil(32))
                    .map(|_| AtomicU32::new(0))
                    .collect(),
                AtomicU32::new(0),
            )
        }
    }

    /// Runs `agents` (their SM ids) on real threads, racing on the counters,
    /// and returns how often each task ran.
    fn run(total: u32, clusters: u32, agents: &[u32], chunk: u32) -> Vec<u32> {
        let partition = Partition::new(total, clusters).unwrap();
        let counters = Counters::new(clusters);
        let runs = Mutex::new(vec![0u32; total as usize]);
        std::thread::scope(|scope| {
            for &sm in agents {
                let (counters, runs, partition) = (&counters, &runs, &partition);
                scope.spawn(move || {
                    let mut claimer = Claimer::new(sm, clusters);
                    while let Some(claim) = claimer.claim(counters, partition, chunk) {
                        let mut runs = runs.lock().unwrap();
                        for w in claim.first..claim.first + claim.count {
                            runs[partition.join(w, claim.cluster) as usize] += 1;
                        }
                    }
                });
            }
        });
        runs.into_inner().unwrap()
    }

    fn assert_exactly_once(runs: &[u32], case: &str) {
        for (v, &n) in runs.iter().enumerate() {
            assert_eq!(n, 1, "{case}: CTA {v} ran {n} times");
        }
    }

    #[test]
    fn every_task_once_when_every_sm_has_agents() {
        let agents: Vec<u32> = (0..8).flat_map(|sm| [sm, sm]).collect();
        for chunk in [1, 3, 8] {
            assert_exactly_once(&run(1000, 8, &agents, chunk), &format!("chunk {chunk}"));
        }
    }

    #[test]
    fn every_task_once_when_sms_are_starved() {
        // Only SMs 2 and 5 of 8 get agents: the other clusters are stolen.
        assert_exactly_once(&run(997, 8, &[2, 5], 4), "starved");
        // A single agent drains everything.
        assert_exactly_once(&run(300, 16, &[7], 1), "one agent");
    }

    #[test]
    fn every_task_once_with_sparse_sm_ids() {
        // Ids beyond the cluster count (sparse %smid) still drain every cluster.
        assert_exactly_once(&run(500, 4, &[0, 9, 17, 130], 2), "sparse");
    }

    #[test]
    fn fewer_tasks_than_clusters() {
        assert_exactly_once(&run(3, 132, &[0, 1, 131], 1), "|V| < M");
        assert_exactly_once(&run(0, 4, &[0, 1], 1), "empty");
    }

    /// Counters that count the claims (atomics) made on them.
    struct Counting(Counters, AtomicU32);
    impl TaskCounters for Counting {
        fn next_chunk(&self, cluster: u32) -> u32 {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.next_chunk(cluster)
        }
        fn drained_count(&self) -> u32 {
            self.0.drained_count()
        }
        fn set_mark(&self, cluster: u32) -> bool {
            self.0.set_mark(cluster)
        }
        fn count_drained(&self) {
            self.0.count_drained()
        }
    }

    #[test]
    fn an_agent_stops_once_every_cluster_is_marked_drained() {
        // 132 clusters of 10 tasks, one chunk each, all claimed; every
        // cluster but the agent's home already found drained by others.
        let partition = Partition::new(1320, 132).unwrap();
        let counters = Counting(Counters::new(132), AtomicU32::new(0));
        for c in 0..132 {
            counters.0 .0[c as usize].store(1, Ordering::Relaxed);
            if c != 7 {
                counters.mark_drained(c);
            }
        }
        let mut claimer = Claimer::new(7, 132);
        assert_eq!(claimer.claim(&counters, &partition, 10), None);
        // A claim on its home only: one on each cluster in turn took 132.
        assert_eq!(counters.1.load(Ordering::Relaxed), 1);
        // Each cluster counts once, whoever marks it again.
        assert_eq!(counters.mark_drained(7), 132);

        // Fewer tasks than clusters: the empty ones need no mark, and a
        // cluster not yet marked is still claimed from.
        let partition = Partition::new(3, 132).unwrap();
        let counters = Counting(Counters::new(132), AtomicU32::new(0));
        for c in 0..3 {
            counters.0 .0[c as usize].store(1, Ordering::Relaxed);
        }
        counters.mark_drained(2);
        let mut claimer = Claimer::new(100, 132);
        assert_eq!(claimer.claim(&counters, &partition, 1), None);
        assert_eq!(counters.1.load(Ordering::Relaxed), 2, "clusters 0 and 1");
    }

    #[test]
    fn an_agent_prefers_its_own_cluster() {
        let partition = Partition::new(40, 4).unwrap();
        let counters = Counters::new(4);
        let mut claimer = Claimer::new(2, 4);
        let claims: Vec<Claim> =
            std::iter::from_fn(|| claimer.claim(&counters, &partition, 4)).collect();
        // Home cluster 2 first, then 3, 0, 1 in ring order.
        let order: Vec<u32> = claims.iter().map(|c| c.cluster).collect();
        assert_eq!(order, [2, 2, 2, 3, 3, 3, 0, 0, 0, 1, 1, 1]);
        assert_eq!(
            claims[2],
            Claim {
                cluster: 2,
                first: 8,
                count: 2
            }
        );
    }
}
