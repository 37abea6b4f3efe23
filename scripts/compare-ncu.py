#!/usr/bin/env python3
"""Compares the locality simulator with ncu on a GPU: for every schedule, does
it move L1->L2 sectors in the same direction (fewer or more than its kernel's
baseline)?

    scripts/compare-ncu.py LOCALITY_JSON NCU_CSV

LOCALITY_JSON: written by `cargo run --release --example locality` (the
simulation at the simulation's sizes). NCU_CSV: `ncu --csv --page raw` of the
same binary run with `--gpu-size simulate` (see .gpu/ncu-locality.sh), whose
first profiled launch of each entry point is used (ncu flushes the caches
before each). A change within +-2% of the baseline counts as "no change".
Exit status 0; the verdict per schedule is printed.
"""
import csv
import json
import sys

METRIC = "lts__t_sectors_srcunit_tex.sum"
DEAD_ZONE = 0.02


def direction(ratio):
    if ratio > 1 + DEAD_ZONE:
        return "more"
    if ratio < 1 - DEAD_ZONE:
        return "fewer"
    return "same"


def read_ncu(path):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    header = rows[0]
    name_col, metric_col = header.index("Kernel Name"), header.index(METRIC)
    first = {}
    for row in rows[1:]:
        if len(row) <= metric_col or not row[metric_col].replace(",", "").replace(".", "").isdigit():
            continue  # the units row
        name = row[name_col].split("(")[0].strip()
        first.setdefault(name, float(row[metric_col].replace(",", "")))
    return first


def main():
    simulation = json.load(open(sys.argv[1]))["records"]
    measured = read_ncu(sys.argv[2])
    baselines = {r["kernel"]: r for r in simulation if r["schedule"] == "baseline"}
    agree = disagree = missing = 0
    print(f"{'kernel':<16} {'schedule':<28} {'sim':>7} {'GPU':>7}  verdict")
    for r in simulation:
        if r["schedule"] == "baseline":
            continue
        base = baselines[r["kernel"]]
        if r["entry"] not in measured or base["entry"] not in measured:
            print(f"{r['kernel']:<16} {r['schedule']:<28} not profiled")
            missing += 1
            continue
        sim = r["l1_to_l2_sectors"] / base["l1_to_l2_sectors"]
        gpu = measured[r["entry"]] / measured[base["entry"]]
        same = direction(sim) == direction(gpu)
        agree += same
        disagree += not same
        verdict = f"agree ({direction(sim)})" if same else f"DISAGREE: sim {direction(sim)}, GPU {direction(gpu)}"
        print(f"{r['kernel']:<16} {r['schedule']:<28} {sim:6.3f}x {gpu:6.3f}x  {verdict}")
    print(f"{agree} agree, {disagree} disagree, {missing} not profiled "
          f"(L1->L2 sectors relative to each kernel's baseline; +-{DEAD_ZONE:.0%} counts as no change)")


if __name__ == "__main__":
    main()
