#!/usr/bin/env bash
# Prints the path of the suite's newest PTX (the builder writes it to
# target/PROFILE/build/clustered-suite-*/out/kernels.ptx), PROFILE `release`
# or `debug` as given, any profile without one; fails, naming the build
# that writes it, when there is none. The one place the other scripts find it.
set -euo pipefail
cd "$(dirname "$0")/.."
case ${1:-any} in
    release | debug) profile=$1 ;;
    any) profile='*' ;;
    *) echo "usage: scripts/suite-ptx.sh [release|debug]" >&2; exit 2 ;;
esac
# The profile is one of three words, so the glob below sees no user text.
ptx=$(ls -t target/$profile/build/clustered-suite-*/out/kernels.ptx 2>/dev/null | head -1 || true)
if [ -z "$ptx" ]; then
    build="cargo build -p clustered-suite"
    [ "${1:-any}" = release ] && build="cargo build --release -p clustered-suite"
    echo "no suite PTX under target/: run \`$build\` first" >&2
    exit 1
fi
echo "$PWD/$ptx"
