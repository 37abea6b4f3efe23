#!/usr/bin/env python3
"""Replays "the tuner skips candidates predicted slower than the baseline by
more than a margin" (issue 16, item 4) on a measured run, offline:

    cargo run --release -p clustered-suite --example predict -- --all --sim \\
        --bench predict/data/h100-2026-11-25-all.json > OUT.txt
    scripts/predict-skip-replay.py OUT.txt

For each margin: how many candidates (every measured schedule but the
baseline) the rule skips, and on which kernels it skips the measured winner
(the fastest schedule, when it beats the baseline by more than 1%, the
tuner's smallest margin), with the speedup that would remain.
"""
import sys

MARGINS = (0.0, 0.02, 0.05, 0.10, 0.25)


def rows(path):
    """kernel -> [(schedule, predicted ms, measured ms or None)]."""
    out = {}
    for line in open(path):
        t = line.split()
        # kernel, label..., grid, regs, occ, issue, latency, dram, l2, l1,
        # predicted, bound, xMARGIN, measured, error
        if len(t) < 15 or t[0] == "kernel":
            continue
        try:
            predicted = float(t[-5])
            measured = None if t[-2] == "-" else float(t[-2])
        except ValueError:
            continue
        out.setdefault(t[0], []).append((" ".join(t[1:-13]), predicted, measured))
    return out


def pick(baseline, candidates):
    best = min(candidates, key=lambda r: r[2], default=None)
    return best if best and best[2] < baseline[2] / 1.01 else baseline


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    kernels = rows(sys.argv[1])
    for margin in MARGINS:
        skipped = total = 0
        lost = []
        for kernel, schedules in kernels.items():
            baseline = next(r for r in schedules if r[0] == "baseline")
            candidates = [r for r in schedules if r[0] != "baseline" and r[2] is not None]
            kept = [r for r in candidates if r[1] <= baseline[1] * (1 + margin)]
            total += len(candidates)
            skipped += len(candidates) - len(kept)
            full, part = pick(baseline, candidates), pick(baseline, kept)
            if full is not part:
                lost.append(f"{kernel}: {full[0]} {baseline[2] / full[2]:.3f}x -> {part[0]} {baseline[2] / part[2]:.3f}x")
        print(f"margin {margin:.0%}: skips {skipped} of {total} candidates; the winner on {len(lost)} of {len(kernels)} kernels")
        for line in lost:
            print("    " + line)


if __name__ == "__main__":
    main()
