#!/bin/sh
# bench/runtime/gpu-check.sh - build ho-gpu-check and run it: the cuda
# backend's correctness check and H2D/D2H GB/s through the pool next to
# cudaMemcpy from pinned memory.  Short (a few seconds on a GPU).
#
#   bench/runtime/gpu-check.sh [BUILD_DIR] [ho-gpu-check arguments...]
#
# BUILD_DIR defaults to <repo>/build.  Exit status: ho-gpu-check's (77 when
# the cuda backend cannot run here, with the reason printed).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
[ $# -gt 0 ] && shift
jobs=$(nproc 2>/dev/null || echo 2)
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j"$jobs" --target ho-gpu-check >/dev/null
exec "$build/bin/ho-gpu-check" "$@"
