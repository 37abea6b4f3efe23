#!/usr/bin/env bash
# Builds everything that runs on a GPU (examples, test binaries) and stages it,
# with the suite's PTX, in .gpu/ (git-ignored), plus .gpu/run-all.sh that runs
# it all there:
#
#   scripts/gpu-stage.sh            # here, with Rust
#   .gpu/run-all.sh [OUT_DIR]       # on the GPU machine (no Rust needed)
#
# run-all.sh runs every test binary, the locality example, and compute-sanitizer
# memcheck, racecheck and synccheck (every suite kernel in every schedule, small
# sizes) when present;
# ncu-locality.sh profiles every schedule at the simulator's sizes with ncu;
# ncu-access.sh each baseline, for the static report (scripts/access-vs-ncu.py).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=.gpu
rm -rf "$stage" && mkdir -p "$stage/tests"
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >> .git/info/exclude; }

cargo build --release -p clustered-suite -p clustered-bench --examples --bins
cp target/release/examples/locality target/release/examples/pool_overhead target/release/examples/pool_workloads target/release/bench "$stage/"
# The nvcc twins of the baselines (PTX, JIT-compiled there like the Rust PTX).
scripts/build-twins.sh > /dev/null && cp target/twins/suite.ptx "$stage/twins.ptx"
cargo test --release --workspace --no-run --message-format=json 2>/dev/null |
  python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    # The macro and builder tests need a Rust toolchain, not a GPU.
    if (m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]
            and m["target"]["name"] not in ("ui", "typed_ui", "clustered_macros", "clustered_builder", "template")):
        shutil.copy(m["executable"], sys.argv[1] + "/tests/" + m["target"]["name"] + "." + m["target"]["kind"][0])
' "$stage"
cp "$(scripts/suite-ptx.sh release)" "$stage/kernels.ptx"

cat > "$stage/run-all.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every staged GPU binary; exits non-zero if any fails.
cd "$(dirname "$0")"
out=${1:-/tmp/gpu-out}; mkdir -p "$out"
status=0
run() { echo "=== $*"; "$@" || { echo "FAILED: $*"; status=1; }; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
for t in tests/*; do run "$t" --test-threads=1; done
run ./locality --gpu-size simulate --gpu-runs 3 --out "$out/locality"
# The task pool's per-task overhead against launches and a CUDA graph.
run ./pool_overhead 20000 > "$out/pool_overhead.txt"; cat "$out/pool_overhead.txt"
# Batched 64x64 SGEMM and a k-means graph on the pool against launches,
# checked against the CPU reference.
run ./pool_workloads > "$out/pool_workloads.txt"; cat "$out/pool_workloads.txt"
if command -v compute-sanitizer >/dev/null; then
  # Every suite kernel in every schedule (small sizes), the early-exit kernel
  # in every schedule, and the exactly-once tests, under each tool; each
  # tool's report goes to OUT/sanitizer-TOOL-TEST.txt (docs/SANITIZER.md).
  # The clustered_gpu tests provoke API errors on purpose (a kernel without a
  # contract), so memcheck does not report API errors there.
  for tool in memcheck racecheck synccheck; do
    for t in cpu_matches_gpu early_exit clustered_gpu; do
      api=(); [ "$t" = clustered_gpu ] && api=(--report-api-errors no)
      run compute-sanitizer --tool "$tool" "${api[@]}" --error-exitcode 1 \
        --log-file "$out/sanitizer-$tool-$t.txt" tests/$t.test --test-threads=1
      tail -n 3 "$out/sanitizer-$tool-$t.txt"
    done
  done
fi
echo "run-all: $([ $status = 0 ] && echo all passed || echo FAILURES)"
exit $status
RUN
chmod +x "$stage/run-all.sh"

cat > "$stage/bench.sh" <<'RUN'
#!/usr/bin/env bash
# The benchmark: every schedule at benchmark size; JSON, SVG and the tuner's
# choices under OUT.
cd "$(dirname "$0")"
out=${1:-/tmp/gpu-out}; shift || true; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
./bench --out "$out/bench" --tuner "$out/tuner.json" --twins twins.ptx "$@"
RUN
chmod +x "$stage/bench.sh"

cat > "$stage/bench-each.sh" <<'RUN'
#!/usr/bin/env bash
# The benchmark one kernel per process (all of the suite's, or those named),
# each under a time limit, appending to OUT/bench.txt as it goes: a call to a
# device machine with a 10-minute limit returns what finished, and a kernel
# that hangs costs LIMIT seconds, not the run.
#   .gpu/bench-each.sh OUT [KERNEL...]     (LIMIT=240 by default)
cd "$(dirname "$0")"
out=${1:-/tmp/gpu-out}; shift || true; mkdir -p "$out/bench"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
kernels=("$@"); [ ${#kernels[@]} -gt 0 ] || mapfile -t kernels < <(./bench --list)
for k in "${kernels[@]}"; do
  mkdir -p "$out/bench/$k"
  timeout "${LIMIT:-240}" ./bench --only "$k" --out "$out/bench/$k" --tuner "$out/bench/$k/tuner.json" \
    --twins twins.ptx >> "$out/bench.txt" 2> "$out/bench/$k.err"
  echo "bench $k: exit $?"
done
RUN
chmod +x "$stage/bench-each.sh"

cat > "$stage/ncu-locality.sh" <<'RUN'
#!/usr/bin/env bash
# Profiles every schedule at the simulator's sizes with ncu (L1->L2 sectors,
# L1 hit rate, DRAM sectors), simulating all of the GPU's 132 SMs (SMS=N to
# change); compare here with
#   scripts/compare-ncu.py OUT/ncu-locality/locality.json OUT/ncu-locality.csv
cd "$(dirname "$0")"
out=${1:-/tmp/gpu-out}; mkdir -p "$out"
ncu --csv --page raw --print-units base \
  --metrics lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_atom.sum,l1tex__t_sector_hit_rate.pct,dram__sectors_read.sum,dram__sectors_write.sum \
  ./locality --gpu-size simulate --gpu-runs 1 --sms ${SMS:-132} --out "$out/ncu-locality" ${NCU_ARGS:-} > "$out/ncu-locality.csv" 2> "$out/ncu-locality.err"
echo "ncu: exit $?, $(grep -c '^"' "$out/ncu-locality.csv") csv lines"
RUN
chmod +x "$stage/ncu-locality.sh"

# Each suite kernel's baseline entry, for ncu's kernel filter (the static
# report names them: the first of the automatic family).
target/release/examples/access --size simulate --out "$stage/access" > /dev/null
python3 -c '
import json, sys
print(" ".join(r["kernel"] + ":" + r["auto_family"][0] for r in json.load(open(sys.argv[1]))))
' "$stage/access/access.json" > "$stage/baselines.txt"

cat > "$stage/ncu-access.sh" <<'RUN'
#!/usr/bin/env bash
# Each suite kernel's baseline at the simulator's sizes under ncu: L1 and L2
# hit rates and global-load sectors per request, for the static report
# (compare here: scripts/access-vs-ncu.py ACCESS_JSON OUT/ncu-access.csv).
cd "$(dirname "$0")"
out=${1:-/tmp/gpu-out}; mkdir -p "$out"
m=l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_srcunit_tex_op_read.sum,dram__sectors_read.sum
for pair in $(cat baselines.txt); do
  k=${pair%%:*}; base=${pair#*:}
  echo "### $k $base" >> "$out/ncu-access.csv"
  ncu --csv --page raw --print-units base -k "regex:^${base}\$" -c 1 --metrics $m \
    ./locality --only $k --gpu-size simulate --gpu-runs 1 --sms 132 --out /tmp/ncu-access-$k 2>>"$out/ncu-access.err" | grep '^"' >> "$out/ncu-access.csv"
  echo "ncu $k: exit ${PIPESTATUS[0]}"
done
RUN
chmod +x "$stage/ncu-access.sh"

cat > "$stage/ncu-bench.sh" <<'RUN'
#!/usr/bin/env bash
# Why a schedule wins or loses: per schedule of the named kernels, at their
# benchmark sizes, L1 hit rate, L1->L2 sectors (read, write, atomic), L2 hit
# rate, DRAM bytes, achieved warps, the main stall reasons and throughputs,
# and what a warp's mean life takes.
#   .gpu/ncu-bench.sh OUT KERNEL...      (then scripts/ncu-summary.py OUT/ncu-bench-KERNEL.csv)
cd "$(dirname "$0")"
out=${1:-/tmp/gpu-out}; shift; mkdir -p "$out"
metrics=gpu__time_duration.sum,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct
metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sectors_srcunit_tex_op_atom.sum
metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active
metrics+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
metrics+=,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
metrics+=,smsp__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
# A warp's life (ncu-summary.py's `life`): warps resident, cycles, SMs, warps launched.
metrics+=,sm__warps_active.avg.per_cycle_active,sm__cycles_active.avg,device__attribute_multiprocessor_count,smsp__warps_launched.sum
for kernel in "$@"; do
  ncu --csv --page raw --print-units base --metrics "$metrics" \
    ./locality --only "$kernel" --gpu-runs 1 --out "$out/ncu-bench-$kernel" > "$out/ncu-bench-$kernel.csv" 2> "$out/ncu-bench-$kernel.err"
  echo "$kernel: exit $?, $(grep -c '^"' "$out/ncu-bench-$kernel.csv") csv lines"
done
RUN
chmod +x "$stage/ncu-bench.sh"
du -sh "$stage"; ls "$stage" "$stage/tests"
