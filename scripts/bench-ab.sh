#!/usr/bin/env bash
# A/B of two builds of the suite beside the same nvcc twins, on the GPU machine:
#
#   scripts/bench-ab.sh STAGE KERNELS [OUT]
#
# STAGE holds `bench` (the new build: its own PTX is B), `old.ptx` (A: the
# suite PTX of the build before, `scripts/suite-ptx.sh release` there) and
# `twins.ptx` (`scripts/build-twins.sh`). Runs `bench --only KERNELS --no-auto`
# with A (`--ptx old.ptx`), then with B, each with the twins in its rounds;
# RUNS="new old" reverses the order (run both orders: the drift between two
# runs is what a one-way A/B cannot tell from the change). Writes
# OUT/{old,new}/bench.json and prints each run's table.
set -u
stage=$1; kernels=$2; out=${3:-/tmp/bench-ab}
cd "$stage" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for run in ${RUNS:-old new}; do
  ptx=(); [ "$run" = old ] && ptx=(--ptx old.ptx)
  mkdir -p "$out/$run"
  start=$(date +%s)
  CUDA_MODULE_LOADING=EAGER timeout "${LIMIT:-300}" ./bench --twins twins.ptx --only "$kernels" \
    --no-auto "${ptx[@]}" --out "$out/$run" --tuner "$out/$run/tuner.json" > "$out/$run.txt" 2>&1
  echo "=== $run: rc=$? in $(( $(date +%s) - start )) s"
  grep -vE "registers|checking|timing" "$out/$run.txt" | head -40
done
