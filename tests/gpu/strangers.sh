#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU checks of mismatched calls and of the job secret, on a machine of one GPU or more (two
# ranks as two fake hosts, sharing GPU 0 when there is one), logs in $OUT (or /tmp):
#   1. mismatch-*: gpu_test_gpu_mismatch for every kind (count, dtype, op, root, coll, p2p) and
#      none (no false alarm): every rank PASS, with the time to the error;
#   2. secret: all_reduce_perf on the GPU engine as two fake hosts (the handshake on; INFO says
#      so) with tests/strangers/stranger.py at every listening port, each listen() held until
#      its strangers are queued: exact results, every listener's wrong-secret client closed and
#      logged;
#   3. ab-check-calls: the A/B of MONEL_CHECK_CALLS=0 vs 1 (tools/bench/ab-env), AllReduce 8 B
#      launched one by one and from CUDA graphs, and 512 MB, 7 alternating rounds, medians.
# Usage: tests/gpu/strangers.sh BUILD_DIR   (exit status: 0 when 1 and 2 pass)
set -u
B=$(cd "${1:-build}" && pwd)
LOG=${OUT:-/tmp}
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN} LD_LIBRARY_PATH="$B/lib"
rc=0
nvidia-smi -L 2>&1 | tee "$LOG/gpus.log"
for k in count dtype op root coll p2p none; do
  MONEL_CHECK_CALLS=1 timeout 120 "$B/bin/monelrun" -n 2 --fake-hosts 2 \
    "$B/tests/gpu_test_gpu_mismatch" "$k" \
    >"$LOG/mismatch-$k.log" 2>&1
  s=$?
  grep -h 'PASS\|FAIL' "$LOG/mismatch-$k.log"
  [ $s = 0 ] && [ "$(grep -c '^\[[0-9]\] PASS' "$LOG/mismatch-$k.log")" = 2 ] || { echo "FAIL mismatch $k"; rc=1; }
done
# the secret across fake hosts, with strangers
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP python3 tests/strangers/stranger.py --ranks 2 \
  --log "$LOG/secret.log" --hold-lib "$B/tests/libstranger_hold.so" -- "$B/bin/monelrun" -n 2 \
  --fake-hosts 2 "$B/bin/all_reduce_perf" -b 1M -e 64M -f 4 -n 50 -c 1 \
  >"$LOG/secret-stranger.log" 2>&1
srv=$? # also 1 when the job failed
job=$srv
cat "$LOG/secret-stranger.log"
grep -m2 'authenticate with HMAC\|not a rank of this job' "$LOG/secret.log"
if [ $job = 0 ] && [ $srv = 0 ] && grep -q 'Out of bounds values : 0 OK' "$LOG/secret.log" &&
  grep -q 'authenticate with HMAC' "$LOG/secret.log"; then
  echo "PASS secret: exact results with strangers at the ports"
else
  echo "FAIL secret (job $job, stranger $srv): see $LOG/secret.log"
  rc=1
fi
# the A/B: two ranks (threads) sharing the GPUs
PERF="$B/bin/all_reduce_perf -t 2 -g 1" N8=2000 NL=20 ROUNDS=7 AB_TIMEOUT=30 tools/bench/ab-env \
  MONEL_CHECK_CALLS 0 1 2>&1 | tee "$LOG/ab-check-calls.log" | tail -2
PERF="$B/bin/all_reduce_perf -t 2 -g 1 -G 100" N8=2000 NL=20 ROUNDS=7 AB_TIMEOUT=30 tools/bench/ab-env \
  MONEL_CHECK_CALLS 0 1 2>&1 | tee "$LOG/ab-check-calls-graph.log" | tail -2
exit $rc
