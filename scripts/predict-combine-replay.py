#!/usr/bin/env python3
"""Replays other ways of combining the model's bounds into a time (issue 16),
offline, on the breakdown `predict` prints:

    cargo run --release -p clustered-suite --example predict -- --all --sim \\
        --device predict/devices/h100-sxm.json \\
        --bench predict/data/h100-2026-12-07-s51.json > OUT.txt
    scripts/predict-combine-replay.py OUT.txt [OVERLAP]

Each measured schedule's five bounds (issue, latency, DRAM, L2, L1) and its
blocks bound are read back; what the prediction adds to the combined bounds
(task loops, the mapping's wait, the launch) is kept as it is, taken as the
prediction less the shipped combination at OVERLAP (the device file's
`overlap`, default 0.2). Printed per combination: MAPE, the median
per-kernel Spearman, and the pairs more than 2% apart ordered right, as
`predict --all` counts them (`predict::stats`). The breakdown rounds to 3
decimals, so ties differ slightly from the Rust's counts.
"""
import itertools
import re
import statistics
import sys

ROW = re.compile(
    r"^(\S+)\s+(.+?)\s+(\d+)\s+(one|loop)\s+(\d+)\s+(\d+)w"
    + r"\s+([\d.]+)" * 7
    + r"\s+(\S+) x([\d.]+)\s+(\S+)\s*\S*\s*$"
)
BOUNDS = ("issue", "latency", "dram", "l2", "l1")


def read(path):
    rows = []
    for line in open(path):
        m = ROW.match(line.rstrip("\n"))
        if not m or m.group(16) == "-":
            continue
        values = [float(v) for v in m.group(7, 8, 9, 10, 11, 12, 13)]
        row = dict(zip(BOUNDS + ("blocks", "predicted"), values))
        row.update(kernel=m.group(1), measured=float(m.group(16)))
        rows.append(row)
    return rows


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in order[i : j + 1]:
            out[k] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(points):
    if len(points) < 3:
        return None
    x, y = ranks([p for p, _ in points]), ranks([m for _, m in points])
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y))
    vx, vy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    return cov / (vx * vy) ** 0.5 if vx > 0 and vy > 0 else None


def ordered(points, apart=0.02):
    right, total = 0.0, 0
    for a, b in itertools.combinations(points, 2):
        if max(a[1], b[1]) <= min(a[1], b[1]) * (1 + apart):
            continue
        total += 1
        predicted_slower = 0.5 if a[0] == b[0] else float(a[0] > b[0])
        right += predicted_slower if a[1] > b[1] else 1 - predicted_slower
    return right, total


def score(rows, time):
    kernels = {}
    for r in rows:
        kernels.setdefault(r["kernel"], []).append((time(r), r["measured"]))
    points = [p for v in kernels.values() for p in v]
    mape = 100 * sum(abs(p - m) / m for p, m in points) / len(points)
    rhos = [s for s in map(spearman, kernels.values()) if s is not None]
    right = total = 0
    for v in kernels.values():
        r, t = ordered(v)
        right, total = right + r, total + t
    return mape, statistics.median(rhos), right, total


def combined(bounds, blocks, overlap=0.0, third=0.0, norm=None):
    b = sorted(bounds, reverse=True)
    if norm:
        return max(sum(x**norm for x in b) ** (1 / norm), blocks)
    return max(b[0] + overlap * b[1] + third * b[2], blocks)


def main():
    rows = read(sys.argv[1])
    shipped = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    for r in rows:
        bounds = [r[k] for k in BOUNDS]
        r["rest"] = r["predicted"] - combined(bounds, r["blocks"], shipped)
    variants = [("as printed", None)]
    variants += [(f"overlap {o}", dict(overlap=o)) for o in (0.0, 0.1, 0.2, 0.3, 0.5)]
    variants += [(f"overlap 0.2, third {t}", dict(overlap=0.2, third=t)) for t in (0.1, 0.2)]
    variants += [(f"p-norm {p}", dict(norm=p)) for p in (2, 3, 4, 6, 8)]
    print(f"{len(rows)} measured schedules")
    print(f"{'combination':<24} {'MAPE':>6} {'Spearman':>9} {'pairs ordered':>16}")
    for name, how in variants:
        if how is None:
            time = lambda r: r["predicted"]
        else:
            time = lambda r, how=how: combined([r[k] for k in BOUNDS], r["blocks"], **how) + r["rest"]
        mape, rho, right, total = score(rows, time)
        print(f"{name:<24} {mape:5.1f}% {rho:9.2f} {right:9.1f} of {total}")


if __name__ == "__main__":
    main()
