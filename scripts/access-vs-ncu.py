#!/usr/bin/env python3
"""The static locality report against the simulator and ncu, per suite
kernel's baseline, at the simulator's sizes (issue 13):

    cargo run --release --example access -- --validate --size simulate --sms 132 --out OUT
    .gpu/ncu-access.sh GPU_OUT          # on the GPU machine (scripts/gpu-stage.sh)
    scripts/access-vs-ncu.py OUT/access.json GPU_OUT/ncu-access.csv

Prints a markdown table: L1 and L2 hit rates predicted (the estimate) /
simulated / measured (ncu), and global-load sectors per request, predicted
(mean over the kernel's loads) against measured.

ncu's `l1tex__t_sector_hit_rate` and `lts__t_sector_hit_rate` count every
sector (loads and stores, and for L2 also atomics), where the estimate and
the simulator count loads only: a kernel that writes much reads higher on
ncu's side. Measured with caches flushed before the kernel (ncu's default),
like the estimate's and the simulator's cold caches.
"""
import csv
import json
import sys


def read_ncu(path):
    """kernel -> {metric: value} from the `### KERNEL BASELINE` sections."""
    out, kernel, header = {}, None, None
    with open(path, newline="") as f:
        for line in f:
            if line.startswith("###"):
                kernel = line.split()[1]
                continue
            row = next(csv.reader([line]))
            if row and row[0] == "ID":
                header = row
            elif header and row and row[0].isdigit() and kernel:
                out[kernel] = dict(zip(header, row))
    return out


def number(text):
    return float(text.replace(",", ""))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reports = json.load(open(sys.argv[1]))
    measured = read_ncu(sys.argv[2])
    print("| kernel (size) | L1 hit: predicted / simulated / ncu | L2 hit: predicted / simulated / ncu | load sectors per request: predicted / ncu |")
    print("|---|---|---|---|")
    for report in reports:
        name = report["kernel"]
        ncu = measured.get(name)
        predicted, simulated = report["predicted"], report.get("simulated") or {}
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"
        loads = [a["sectors_per_request"] for a in report["accesses"] if a["direction"] == "load"]
        spr = sum(loads) / len(loads) if loads else None
        if ncu:
            l1 = f"{number(ncu['l1tex__t_sector_hit_rate.pct']):.1f}%"
            l2 = f"{number(ncu['lts__t_sector_hit_rate.pct']):.1f}%"
            requests = number(ncu["l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"])
            sectors = number(ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"])
            measured_spr = f"{sectors / requests:.2f}" if requests else "-"
        else:
            l1 = l2 = measured_spr = "not measured"
        print(
            f"| {name} ({report['problem']}) "
            f"| {pct(predicted['l1_hit'])} / {pct(simulated.get('l1_hit'))} / {l1} "
            f"| {pct(predicted['l2_hit'])} / {pct(simulated.get('l2_hit'))} / {l2} "
            f"| {'-' if spr is None else f'{spr:.2f}'} / {measured_spr} |"
        )


if __name__ == "__main__":
    main()
