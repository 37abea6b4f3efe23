#!/usr/bin/env bash
# Compiles the CUDA C++ twins of the suite's baselines (twins/suite.cu) for
# sm_90 with nvcc, to target/twins/suite.ptx and target/twins/suite.cubin,
# and prints ptxas's resources for each twin. No GPU needed.
#
# nvcc comes from PATH, $NVCC, or the PyPI packages of CUDA 13 (installed
# with pip when missing): nvidia-cuda-nvcc (nvcc, ptxas), nvidia-nvvm (cicc),
# nvidia-cuda-crt and nvidia-cuda-runtime (headers). A host C++ compiler
# (g++) must be installed: nvcc preprocesses with it.
#
# Flags, and why (twins/suite.cu says more):
#   -fmad=false  rustc never fuses a * b + c; the twins call fmaf where the
#                Rust kernels call fma, and must not fuse anything else.
#   -O3, IEEE division and square root, denormals kept: nvcc's defaults
#                without fast-math, like rustc's f32 arithmetic.
set -euo pipefail
cd "$(dirname "$0")/.."

cu13_bin() {
    python3 -c "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', 'bin'))" 2>/dev/null
}
nvcc=${NVCC:-$(command -v nvcc || true)}
if [ -z "$nvcc" ]; then
    bin=$(cu13_bin || true)
    if [ -z "$bin" ] || [ ! -x "$bin/nvcc" ] || [ ! -x "$bin/../nvvm/bin/cicc" ] \
        || [ ! -f "$bin/../include/cuda_runtime.h" ] || [ ! -f "$bin/../include/crt/host_config.h" ]; then
        echo "nvcc (CUDA 13) not found: installing it from PyPI" >&2
        python3 -m pip install --quiet --disable-pip-version-check \
            "nvidia-cuda-nvcc==13.*" "nvidia-nvvm==13.*" "nvidia-cuda-crt==13.*" "nvidia-cuda-runtime==13.*"
        bin=$(cu13_bin)
    fi
    nvcc=$bin/nvcc
fi
command -v "${CXX:-g++}" >/dev/null || { echo "nvcc needs a host C++ compiler (g++) to preprocess" >&2; exit 1; }

out=target/twins
mkdir -p "$out"
flags=(-arch=sm_90 -O3 -fmad=false -std=c++17)
echo "$nvcc ${flags[*]} twins/suite.cu"
"$nvcc" "${flags[@]}" -ptx twins/suite.cu -o "$out/suite.ptx"
# nvcc stamps its own PTX ISA version (9.5 for CUDA 13.5), which a 13.0
# driver refuses to JIT; the twins use no instruction newer than the
# Rust kernels' PTX does, so stamp the oldest version sm_90 accepts (7.8,
# what rustc emits) and let the driver say so if that is ever wrong.
sed -i 's/^\.version [0-9.]*$/.version 7.8/' "$out/suite.ptx"
"$nvcc" "${flags[@]}" -cubin -Xptxas -v twins/suite.cu -o "$out/suite.cubin" 2>"$out/ptxas.log" \
    || { cat "$out/ptxas.log" >&2; exit 1; }
echo "wrote $out/suite.ptx and $out/suite.cubin; ptxas -v per twin:"
awk '
  /Compiling entry function/ { split($0, a, "'\''"); name = a[2] }
  /spill stores/ && name { spill = $5 " B spill stores, " $9 " B spill loads" }
  /Used [0-9]+ registers/ && name { printf "  %-24s %s | %s\n", name, substr($0, index($0, "Used")), spill; name = "" }
  /error/ { print; failed = 1 }
  END { exit failed }' "$out/ptxas.log"
