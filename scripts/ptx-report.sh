#!/usr/bin/env bash
# Assembles the suite's PTX with ptxas for sm_90 and prints, per kernel,
# registers, shared memory and spills. Fails on any ptxas error.
# Needs a prior build (cargo build / cargo test) and ptxas on PATH or from
# the PyPI package nvidia-cuda-nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
ptx=$(scripts/suite-ptx.sh)
ptxas=${PTXAS:-$(command -v ptxas || python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin', 'ptxas'))")}
echo "ptxas -arch=sm_90 -v $ptx"
"$ptxas" -arch=sm_90 -v "$ptx" -o /dev/null 2>&1 | awk '
  /Compiling entry function/ { split($0, a, "'\''"); name = a[2] }
  /spill stores/ && name { spill = $5 " B spill stores, " $9 " B spill loads" }
  /Used [0-9]+ registers/ && name { printf "  %-28s %s | %s\n", name, substr($0, index($0, "Used")), spill; name = "" }
  /error/ { print; failed = 1 }
  END { exit failed }'
