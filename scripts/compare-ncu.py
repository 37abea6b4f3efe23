#!/usr/bin/env python3
"""Compares the locality simulator with ncu on a GPU: for every schedule, does
it move L1->L2 sectors in the same direction (fewer or more than its kernel's
baseline)?

    scripts/compare-ncu.py LOCALITY_JSON NCU_CSV

LOCALITY_JSON: written by `cargo run --release --example locality` (the
simulation at the simulation's sizes). NCU_CSV: `ncu --csv --page raw` of the
same binary run with `--gpu-size simulate --gpu-runs 1` (see
.gpu/ncu-locality.sh). That run launches, per kernel in the suite's order,
every schedule once to check it, then once timed; the check launches are
used (ncu flushes the caches before each), matched to the simulation's
records in order. Sectors are L1->L2 reads plus writes: atomics are left out
on both sides (the agents' end-of-work stealing sweep is O(agents x SMs)
atomics, 1056 x 132 on the GPU against 64 x 8 simulated, which says nothing
about the schedule's locality). A change within +-2% of the baseline counts
as "no change". Exit status 0; the verdict per schedule is printed.
"""
import csv
import json
import sys

METRICS = ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum")
DEAD_ZONE = 0.02


def direction(ratio):
    if ratio > 1 + DEAD_ZONE:
        return "more"
    if ratio < 1 - DEAD_ZONE:
        return "fewer"
    return "same"


def read_ncu(path):
    """(kernel name, read + write sectors) of every profiled launch, in order."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    header = rows[0]
    name_col = header.index("Kernel Name")
    columns = [header.index(m) for m in METRICS]
    launches = []
    for row in rows[1:]:
        values = [row[c].replace(",", "") if c < len(row) else "" for c in columns]
        if not all(v.replace(".", "").isdigit() for v in values):
            continue  # the units row
        launches.append((row[name_col].split("(")[0].strip(), sum(float(v) for v in values)))
    return launches


def align(simulation, launches):
    """The check launch of each record. Per kernel, in the suite's order, the
    run launched every schedule once (the check pass, starting with the
    baseline), then once timed (starting with the baseline again); schedules
    the profiled binary did not have are left out as "not profiled"."""
    measured, at = {}, 0
    kernels = []
    for r in simulation:
        if r["kernel"] not in kernels:
            kernels.append(r["kernel"])
    for kernel in kernels:
        records = [r for r in simulation if r["kernel"] == kernel]
        baseline = records[0]["entry"]
        while at < len(launches) and launches[at][0] != baseline:
            at += 1
        if at == len(launches):
            sys.exit(f"no launch of {baseline} for {kernel}: not the run of this simulation")
        block = [launches[at]]
        at += 1
        while at < len(launches) and launches[at][0] != baseline:
            block.append(launches[at])
            at += 1
        at += len(block)  # the timed round
        sectors = dict(reversed(block))  # the first launch of each entry
        for r in records:
            if r["entry"] in sectors:
                measured[(kernel, r["schedule"])] = sectors[r["entry"]]
    return measured


def loads_and_stores(record):
    return record["l1_to_l2_sectors"] - record.get("l1_to_l2_atomic_sectors", 0)


def main():
    simulation = json.load(open(sys.argv[1]))["records"]
    measured = align(simulation, read_ncu(sys.argv[2]))
    baselines = {r["kernel"]: r for r in simulation if r["schedule"] == "baseline"}
    agree = disagree = missing = 0
    print(f"{'kernel':<16} {'schedule':<28} {'sim':>7} {'GPU':>7}  verdict")
    for r in simulation:
        if r["schedule"] == "baseline":
            continue
        base = baselines[r["kernel"]]
        key, base_key = (r["kernel"], r["schedule"]), (r["kernel"], "baseline")
        if key not in measured or base_key not in measured:
            print(f"{r['kernel']:<16} {r['schedule']:<28} not profiled")
            missing += 1
            continue
        sim = loads_and_stores(r) / loads_and_stores(base)
        gpu = measured[key] / measured[base_key]
        same = direction(sim) == direction(gpu)
        agree += same
        disagree += not same
        verdict = f"agree ({direction(sim)})" if same else f"DISAGREE: sim {direction(sim)}, GPU {direction(gpu)}"
        print(f"{r['kernel']:<16} {r['schedule']:<28} {sim:6.3f}x {gpu:6.3f}x  {verdict}")
    print(f"{agree} agree, {disagree} disagree, {missing} not profiled "
          f"(L1->L2 sectors relative to each kernel's baseline; +-{DEAD_ZONE:.0%} counts as no change)")


if __name__ == "__main__":
    main()
