#!/usr/bin/env bash
# The NCCL 2.29-2.32 functions on the GPU engine (tests/gpu/test_gpu_api232.c): the nccl*Config
# collectives, Suspend/Resume with a collective after Resume, Grow from 2 to 3 ranks, and what
# ncclPutSignal does there; three ranks as threads (on one GPU they share it). Then the CPU-engine
# test of the same functions (mp_test_api232) for comparison.
# Usage: tests/gpu/api232.sh BUILD_DIR (a build with CUDA). Logs go to $OUT (or /tmp).
set -u
B=$(cd "${1:-build}" && pwd)
LOG=${OUT:-/tmp}
rc=0
{
  nvidia-smi -L
  LD_LIBRARY_PATH=$B/lib timeout 300 "$B/tests/gpu_test_gpu_api232" || rc=1
  NCCL_DEBUG=WARN LD_LIBRARY_PATH=$B/lib timeout 300 "$B/tests/gpu_test_gpu_api232" || rc=1
  MONEL_ENGINE=cpu timeout 300 "$B/tests/mp_test_api232" || rc=1
} 2>&1 | tee "$LOG/api232.log"
[ $rc = 0 ] && echo "PASS api232" || echo "FAIL api232"
exit $rc
