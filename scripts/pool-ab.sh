#!/usr/bin/env bash
# Stages the task pool's benchmarks built at several commits, to compare them
# in one device call (a pool's rows move from one call to the next by more
# than most changes measured with them: docs/BENCHMARKS.md, the task pool's
# sections):
#
#   scripts/pool-ab.sh REV...     # here, with Rust: .gpu/<binary>.<rev> and .gpu/ab.sh
#   .gpu/ab.sh [ROUNDS]           # on the GPU machine: the builds alternated, ROUNDS times (2)
#
# Each commit is built in a worktree of its own (.ab/<rev>) with a target
# directory of its own (a target directory shared between two trees once
# mixed their code into one binary), kept for the next call (about 330 MiB
# each; `git worktree remove --force .ab/<rev>` when done). The binaries
# are stripped and compressed (about 2.4 MiB each; ab.sh unpacks them):
# what `run` carries is limited to 64 MiB, and three builds stripped alone
# came to 61 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/pool-ab.sh REV..." >&2; exit 2; }
stage=.gpu
rm -rf "$stage" && mkdir -p "$stage"
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu/' >> .git/info/exclude; }

names=()
for rev in "$@"; do
  hash=$(git rev-parse --short=7 "$rev^{commit}")
  tree=.ab/$hash
  if [ ! -d "$tree" ]; then
    git worktree add --detach "$tree" "$hash" > /dev/null
  fi
  echo "building $rev ($hash) in $tree" >&2
  (
    cd "$tree"
    export CARGO_TARGET_DIR="$PWD/target"
    cargo build --release -p clustered-suite --example pool_overhead --example pool_workloads
    cargo test --release -p clustered-suite --test pool_gpu --no-run --message-format=json 2>/dev/null |
      python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "pool_gpu":
        print(m["executable"])
' > target/pool_gpu.path
  ) >&2
  cp "$tree/target/release/examples/pool_overhead" "$stage/pool_overhead.$hash"
  cp "$tree/target/release/examples/pool_workloads" "$stage/pool_workloads.$hash"
  cp "$(cat "$tree/target/pool_gpu.path")" "$stage/pool_gpu.$hash"
  names+=("$hash")
done
strip "$stage"/pool_*
gzip -9 "$stage"/pool_*

cat > "$stage/ab.sh" <<RUN
#!/usr/bin/env bash
# The builds of $(printf '%s ' "${names[@]}")alternated; then each build's pool_gpu.
cd "\$(dirname "\$0")"
for packed in pool_*.gz; do [ -e "\$packed" ] && gunzip -f "\$packed"; done
export CUDA_MODULE_LOADING=EAGER
rounds=\${1:-2}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
status=0
for round in \$(seq "\$rounds"); do
  for build in ${names[*]}; do
    echo "== pool_overhead \$build, round \$round"; ./pool_overhead.\$build 20000 || status=1
    echo "== pool_workloads \$build, round \$round"; ./pool_workloads.\$build || status=1
  done
done
for build in ${names[*]}; do
  # Its status, not tail's: a failing test fails the script.
  echo "== pool_gpu \$build"; ./pool_gpu.\$build > pool_gpu.\$build.log 2>&1 || status=1
  tail -3 pool_gpu.\$build.log
done
exit \$status
RUN
chmod +x "$stage/ab.sh"
size=$(du -sm "$stage" | cut -f1)
echo "staged ${names[*]} in $stage ($size MiB)"
[ "$size" -lt 64 ] || echo "warning: $stage is $size MiB; run carries at most 64 MiB: stage fewer builds" >&2
