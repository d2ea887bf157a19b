#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The NCCL 2.29-2.32 functions on the GPU engine (tests/gpu/test_gpu_api232.c): the nccl*Config
# collectives, launch-completion events (ncclCollConfig_t.launchCompletionEvent: rank 0's event
# must fire before rank 1 calls), a per-call NCCL_CTA_POLICY_ZERO on the copy-engine path (set up
# on first use; refused for reductions and where the path cannot run), Suspend/Resume with a
# collective after Resume, Grow from 2 to 3 ranks, PutSignal/Signal/WaitSignal between two ranks
# and a peer's window read and written through ncclGetPeerDevicePointer; three ranks as threads
# (on one GPU they share it), with FIFOs in GPU memory and in pinned host memory
# (NCCL_P2P_DISABLE=1), then two ranks of one thread (ncclCommInitAll) with per-call ZERO in one
# group. Then two processes (monelrun -n 2, sharing GPU 0 on a machine of one GPU): windows read
# and written through CUDA IPC, per-call ZERO across processes. Then the CPU-engine test of the
# same functions (mp_test_api232).
# Usage: tests/gpu/api232.sh BUILD_DIR (a build with CUDA; the test programs and monelrun are
# built there first when missing, BUILD_DIR configured when it has no CMakeCache.txt; a build cut
# short by its 540 s limit goes on where it stopped when the script is run again). Logs go to
# $OUT (or /tmp): api232-<step>.log. Every step prints its name and time as it starts, the test's
# PASS/FAIL lines and "PASS step NAME" or "FAIL step NAME" as it ends; the last line is
# "PASS api232" or "FAIL api232". Each step is bounded (API232_RUN_TIMEOUT, 300 s: then the
# test gets SIGALRM, on which its watchdog names the step each rank is stuck in, as it does by
# itself after 240 s; SIGKILL 10 s later).
set -u
B=${1:-build}
LOG=${OUT:-/tmp}
export NCCL_NVLS_ENABLE=0
LIMIT=${API232_RUN_TIMEOUT:-300}
rc=0
t0=$SECONDS
say() { echo "== [$((SECONDS - t0)) s] $*"; }
step() { # name env... -- command...: output to its log, its PASS/FAIL/SKIP lines here
  local name=$1
  shift
  say "$name"
  env "$@" > "$LOG/api232-$name.log" 2>&1
  local s=$?
  grep -E '^(\[[0-9]+\] )?(PASS|FAIL|SKIP)|^ok |tests, [0-9]+ failed' "$LOG/api232-$name.log"
  if [ $s = 0 ]; then
    echo "PASS step $name"
  else
    echo "FAIL step $name (exit $s; last lines of $LOG/api232-$name.log:)"
    tail -n 15 "$LOG/api232-$name.log"
    rc=1
  fi
}
nvidia-smi -L 2>&1
if [ ! -f "$B/CMakeCache.txt" ]; then
  say "configure $B"
  timeout 300 cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release > "$LOG/api232-configure.log" 2>&1 ||
    { tail -n 20 "$LOG/api232-configure.log"; echo "FAIL api232 (configure)"; exit 1; }
fi
B=$(cd "$B" && pwd)
if [ ! -x "$B/tests/gpu_test_gpu_api232" ] || [ ! -x "$B/tests/mp_test_api232" ] ||
  [ ! -x "$B/bin/monelrun" ]; then
  say "build gpu_test_gpu_api232 mp_test_api232 monelrun (-j$(nproc))"
  # Progress lines ("[ 42%] ...") as they come, so a slow build is seen to move.
  timeout 540 cmake --build "$B" -j"$(nproc)" --target gpu_test_gpu_api232 mp_test_api232 \
    monelrun 2>&1 | tee "$LOG/api232-build.log" |
    grep --line-buffered -E '^\[ *[0-9]+%\]|error' | sed -u -n '1~10p'
  [ -x "$B/tests/gpu_test_gpu_api232" ] && [ -x "$B/tests/mp_test_api232" ] &&
    [ -x "$B/bin/monelrun" ] ||
    { tail -n 20 "$LOG/api232-build.log"; echo "FAIL api232 (build)"; exit 1; }
fi
# both_ranks NAME PATTERN WHAT: each of the two ranks of step NAME (two processes) printed
# PATTERN, or both said SKIP (no GPU); otherwise "FAIL NAME: k of 2 ranks WHAT".
both_ranks() {
  local log=$LOG/api232-$1.log n
  n=$(grep -c "^\[[01]\] $2" "$log")
  if [ "$(grep -c '^\[[01]\] SKIP' "$log")" = 2 ]; then
    echo "SKIP $1: no GPU"
  elif [ "$n" != 2 ]; then
    echo "FAIL $1: $n of 2 ranks $3"
    rc=1
  fi
}
# The threads test on SIGALRM names each rank's step; monelrun on SIGTERM stops its ranks.
T=(timeout -s ALRM -k 10 "$LIMIT")
step gpu LD_LIBRARY_PATH="$B/lib" NCCL_DEBUG=WARN "${T[@]}" "$B/tests/gpu_test_gpu_api232"
step gpu-hostmem LD_LIBRARY_PATH="$B/lib" NCCL_DEBUG=WARN NCCL_P2P_DISABLE=1 "${T[@]}" \
  "$B/tests/gpu_test_gpu_api232"
step gpu-procs LD_LIBRARY_PATH="$B/lib" NCCL_DEBUG=WARN timeout -k 10 "$LIMIT" "$B/bin/monelrun" \
  -n 2 "$B/tests/gpu_test_gpu_api232" procs
both_ranks gpu-procs 'PASS test_gpu_api232 procs rank' "passed"
step gpu-hosts LD_LIBRARY_PATH="$B/lib" NCCL_DEBUG=WARN timeout -k 10 "$LIMIT" "$B/bin/monelrun" \
  -n 2 --fake-hosts 2 "$B/tests/gpu_test_gpu_api232" procs hosts
both_ranks gpu-hosts 'PASS one-sided across hosts' "got the other's puts across hosts"
step cpu-engine LD_LIBRARY_PATH="$B/lib" MONEL_ENGINE=cpu timeout -k 10 "$LIMIT" \
  "$B/tests/mp_test_api232"
say "end"
[ $rc = 0 ] && echo "PASS api232" || echo "FAIL api232"
exit $rc
