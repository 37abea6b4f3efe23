#!/usr/bin/env python3
"""Probe (issue 15, session 53): where a k-means assign CTA's time goes in
the pool. docs/BENCHMARKS.md, "The k-means assign's loads, unguarded", has
what it measured.

    git apply scripts/probes/pool-kmeans-trace.patch   # a probe build, not to commit
    cargo build --release -p clustered-suite --example pool_workloads
    # on the GPU machine:
    TRACE_OUT=trace.txt ./pool_workloads 2000 3
    scripts/probes/pool-kmeans-trace.py trace.txt

The patched `kmeans_assign` and `kmeans_update` store, per CTA, its SM, its
resident block and `%globaltimer` at its start, before and after its
barrier and at its end into the tail of the partials buffer (`sub` is
0xffff for the update); `pool_workloads` writes the first 40,000 records
after the pool's k-means rows (the 16-assign graph's runs come first).
This prints the medians of the assign CTA's span and of its parts over the
16-assign graph's first 80 iterations.
"""
import statistics
import sys

for path in sys.argv[1:]:
    rows = [tuple(map(int, line.split())) for line in open(path)]
    assigns, updates, iterations = [], [], 0
    for r in rows:
        if r[0] == 0xFFFF:
            updates.append(r)
            iterations += 1
            if iterations >= 80:
                break
        else:
            assigns.append(r)
    span = lambda x, y: (y - x) & 0xFFFFFFFF
    median = lambda v: f"{statistics.median(v) / 1000:.2f}"
    print(
        f"{path}: assign CTA {median([span(r[3], r[4]) for r in assigns])} us = "
        f"before its barrier {median([span(r[3], r[6]) for r in assigns])} + "
        f"barrier {median([span(r[6], r[7]) for r in assigns])} + "
        f"after {median([span(r[7], r[4]) for r in assigns])}; "
        f"update {median([span(r[3], r[4]) for r in updates])} us "
        f"({len(assigns)} CTAs, {len(updates)} updates)"
    )
