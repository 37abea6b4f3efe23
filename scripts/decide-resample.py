#!/usr/bin/env python3
"""How often the tuner's rule would pick SCHEDULE over the baseline, from a
bench run's rounds drawn again at random (the rounds kept whole, so each
draw is a measurement the tuner could have made):

    scripts/decide-resample.py RECORDS.json KERNEL SCHEDULE [--rounds 10] [--draws 20000]
    scripts/decide-resample.py RECORDS.json --compare

`--compare` decides every kernel of RECORDS on all its rounds by both rules
and prints where they pick differently.

RECORDS is a predict/data file or a bench.json, with `samples_ms` (one
time per round; nvcc twins are left out). It
prints the share of draws that pick SCHEDULE among the kernel's schedules
(`--rounds` rounds), and of trials of SCHEDULE alone against the baseline
(`--trial` rounds, 5 as `TunePolicy::trial`), by the median rule alone and with host/src/tuner.rs's trimmed
mean, both with the margin of `decide_with_margin` (max(1%, the
baseline's interquartile spread)). A mirror of that Rust, for the docs'
figures; the Rust is the rule.
"""
import argparse, json, random


def median(x):
    s = sorted(x)
    return s[len(s) // 2]


def trimmed_mean(x):
    s = sorted(x)
    t = len(s) // 10
    kept = s[t:len(s) - t]
    return sum(kept) / len(kept)


def spread(x):
    s = sorted(x)
    q = lambda i: s[(len(s) - 1) * i // 4]
    return (q(3) - q(1)) / median(s)


def decide(samples, with_mean):
    base = samples[0]
    best = (0, median(base))
    for i, c in enumerate(samples[1:], 1):
        wins = sum(1 for x, y in zip(c, base) if x < y)
        ok = median(c) < median(base) and 2 * wins > len(base)
        ok = ok and (not with_mean or trimmed_mean(c) < trimmed_mean(base))
        if ok and median(c) < best[1]:
            best = (i, median(c))
    w = best[0]
    margin = min(max(spread(base), 0.01), 0.5)
    return w if w and median(samples[w]) < median(base) * (1 - margin) else 0


def compare(path):
    records = [r for r in json.load(open(path))["records"] if r["schedule"] != "nvcc twin"]
    kernels = list(dict.fromkeys(r["kernel"] for r in records))
    differ = 0
    for kernel in kernels:
        rows = [r for r in records if r["kernel"] == kernel]
        n = min(len(r["samples_ms"]) for r in rows)
        samples = [r["samples_ms"][:n] for r in rows]
        median_rule, mean_rule = decide(samples, False), decide(samples, True)
        if median_rule != mean_rule:
            differ += 1
            print(f"{kernel}: {rows[median_rule]['schedule']} by the median, "
                  f"{rows[mean_rule]['schedule']} with the trimmed mean")
    print(f"{differ} of {len(kernels)} kernels decided differently")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("records")
    p.add_argument("kernel", nargs="?")
    p.add_argument("schedule", nargs="?")
    p.add_argument("--compare", action="store_true", help="both rules on every kernel's rounds")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--draws", type=int, default=20000)
    p.add_argument("--trial", type=int, default=5, help="launches of each side in a trial")
    a = p.parse_args()
    if a.compare:
        return compare(a.records)
    if a.kernel is None or a.schedule is None:
        p.error("KERNEL and SCHEDULE, or --compare")
    rows = [
        r
        for r in json.load(open(a.records))["records"]
        if r["kernel"] == a.kernel and r["schedule"] != "nvcc twin"
    ]
    if not rows or "samples_ms" not in rows[0]:
        raise SystemExit(f"{a.records}: no samples_ms for {a.kernel}")
    names = [r["schedule"] for r in rows]
    if a.schedule not in names or names[0] != "baseline":
        raise SystemExit(f"{a.kernel}: schedules are {names}")
    n = min(len(r["samples_ms"]) for r in rows)
    target = names.index(a.schedule)
    random.seed(1)
    for label, chosen, rounds in [
        (f"measured among {len(rows)} schedules, {a.rounds} rounds", range(len(rows)), a.rounds),
        (f"a trial against the baseline, {a.trial} rounds", [0, target], a.trial),
    ]:
        chosen = list(chosen)
        picks = {False: 0, True: 0}
        for _ in range(a.draws):
            draw = [random.randrange(n) for _ in range(rounds)]
            samples = [[rows[i]["samples_ms"][j] for j in draw] for i in chosen]
            for with_mean in picks:
                if chosen[decide(samples, with_mean)] == target:
                    picks[with_mean] += 1
        print(f"{label}: picks {a.schedule} in {100 * picks[False] / a.draws:.1f}% "
              f"by the median, {100 * picks[True] / a.draws:.1f}% with the trimmed mean")


if __name__ == "__main__":
    main()
