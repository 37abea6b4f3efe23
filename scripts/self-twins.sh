#!/usr/bin/env bash
# The control for a Rust/nvcc ratio: writes a copy of the suite's PTX in
# which the named baselines are renamed `<kernel>_twin`, so that `bench
# --twins` times each Rust baseline a second time in its twin's slot (same
# module path, same launch, same place in each round). A ratio away from
# 1.000 there is the measurement's, not the compiler's.
#
#   scripts/self-twins.sh OUT.ptx KERNEL [KERNEL...]
#   bench --only ... --no-auto --twins OUT.ptx
#
# Session 30 (H200): 0.999-1.003 on six kernels whose real twins were
# 0.980-1.036 (docs/BENCHMARKS.md, "Rust against itself in the twin's slot").
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: scripts/self-twins.sh OUT.ptx KERNEL [KERNEL...]" >&2
    exit 2
fi
out=$1
shift
ptx=$(scripts/suite-ptx.sh release)
names=()
for kernel in "$@"; do
    # Entry names only: the name goes into a sed pattern.
    if ! [[ $kernel =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        echo "not a kernel name: '$kernel'" >&2
        exit 2
    fi
    if ! grep -q "^\.visible \.entry $kernel(" "$ptx"; then
        echo "no entry '$kernel' in $ptx" >&2
        exit 1
    fi
    names+=("$kernel")
done
pattern=$(IFS='|'; echo "${names[*]}")
sed -E "s/^\.visible \.entry ($pattern)\(/.visible .entry \1_twin(/" "$ptx" > "$out"
echo "$out: ${#names[@]} baselines renamed <kernel>_twin, from $ptx"
