#!/usr/bin/env python3
"""Summarises .gpu/ncu-bench.sh output: one line per schedule (its first
profiled launch, the check launch), the metrics that say why it wins or
loses. Where the run has them, `life` is a warp's mean life in SM
cycles by Little's law (warps resident per active cycle x active cycles
x SMs / warps launched): what a light kernel's throughput is, at a
fixed number of resident warps. A task loop's warp lives the whole loop,
so its `life` is the loop's, not a task's. .gpu/ncu-bench.sh collects
these metrics.

    scripts/ncu-summary.py OUT/ncu-bench-KERNEL.csv [...]
"""
import csv
import sys

COLUMNS = [
    ("gpu__time_duration.sum", "us", 1e-3),
    ("sm__warps_active.avg.pct_of_peak_sustained_active", "warps%", 1),
    ("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "long-sb", 1),
    ("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "barrier", 1),
    ("smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio", "lg-thr", 1),
    ("smsp__inst_executed.sum", "Minst", 1e-6),
    ("l1tex__t_sector_hit_rate.pct", "L1hit%", 1),
    ("lts__t_sector_hit_rate.pct", "L2hit%", 1),
    ("lts__t_sectors_srcunit_tex_op_read.sum", "L2rdMs", 1e-6),
    ("lts__t_sectors_srcunit_tex_op_write.sum", "L2wrMs", 1e-6),
    ("dram__bytes_read.sum", "DRrdMB", 1e-6),
    ("dram__bytes_write.sum", "DRwrMB", 1e-6),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM%", 1),
    ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2%", 1),
]


LIFE = (
    "sm__warps_active.avg.per_cycle_active",
    "sm__cycles_active.avg",
    "device__attribute_multiprocessor_count",
    "smsp__warps_launched.sum",
)


def warp_life(header, row):
    """A warp's mean life in cycles, or '-' without the four metrics."""
    try:
        resident, cycles, sms, launched = (
            float(row[header.index(m)].replace(",", "")) for m in LIFE
        )
        return f"{resident * cycles * sms / launched:9.0f}"
    except (ValueError, ZeroDivisionError):
        return f"{'-':>9}"


def main():
    for path in sys.argv[1:]:
        with open(path, newline="") as f:
            rows = list(csv.reader(l for l in f if l.startswith('"')))
        header = rows[0]
        name_col = header.index("Kernel Name")
        seen = set()
        print(path)
        print(f"  {'entry':<36}" + "".join(f"{label:>9}" for _, label, _ in COLUMNS) + f"{'life':>9}")
        for row in rows[1:]:
            name = row[name_col].split("(")[0].strip()
            if name in seen or not row[header.index(COLUMNS[0][0])].replace(",", "").replace(".", "").isdigit():
                continue
            seen.add(name)
            cells = []
            for metric, _, scale in COLUMNS:
                value = row[header.index(metric)].replace(",", "") if metric in header else ""
                try:
                    cells.append(f"{float(value) * scale:9.2f}")
                except ValueError:
                    cells.append(f"{'-':>9}")
            print(f"  {name:<36}" + "".join(cells) + warp_life(header, row))


if __name__ == "__main__":
    main()
