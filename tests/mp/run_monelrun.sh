#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Tests of monelrun: environment of each rank, output prefixes, failure propagation, multi-host
# options, fake hosts and translation of a torchrun, Open MPI or srun environment.
# Usage: tests/mp/run_monelrun.sh BUILD_DIR
set -u
build=${1:?usage: run_monelrun.sh BUILD_DIR}
run="$build/bin/monelrun"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { echo "PASS $1"; }
fail() {
  echo "FAIL $1"
  shift
  [ $# -gt 0 ] && printf '  %s\n' "$@"
  fails=$((fails + 1))
}
# check NAME EXPECTED ACTUAL
check() {
  if [ "$2" == "$3" ]; then pass "$1"; else fail "$1" "expected: $2" "got:      $3"; fi
}

if [ ! -x "$run" ]; then
  echo "FAIL monelrun not built at $run"
  exit 1
fi

# Environment of every rank; NCCL_COMM_ID is the same loopback address for all.
unset NCCL_COMM_ID
out=$("$run" -n 4 sh -c 'echo $MONEL_RANK/$MONEL_NRANKS $MONEL_LOCAL_RANK/$MONEL_LOCAL_SIZE' |
  sort)
check "env: ranks and sizes" "$(printf '[0] 0/4 0/4\n[1] 1/4 1/4\n[2] 2/4 2/4\n[3] 3/4 3/4')" "$out"
ids=$("$run" -n 3 sh -c 'echo $NCCL_COMM_ID' | sed 's/^\[[0-9]*\] //' | sort -u)
if [[ $ids =~ ^127\.0\.0\.1:[0-9]+$ ]]; then pass "env: one NCCL_COMM_ID ($ids)"; else
  fail "env: one NCCL_COMM_ID" "got: $ids"; fi
out=$(NCCL_COMM_ID=10.1.2.3:4567 "$run" -n 2 sh -c 'echo $NCCL_COMM_ID' | sort -u)
check "env: NCCL_COMM_ID passes through" "$(printf '[0] 10.1.2.3:4567\n[1] 10.1.2.3:4567')" "$out"

# Prefixes: stdout stays stdout, stderr stays stderr, a partial last line is flushed.
"$run" -n 2 sh -c 'echo out$MONEL_RANK; echo err$MONEL_RANK >&2; printf tail$MONEL_RANK' \
  >"$tmp/out" 2>"$tmp/err"
check "prefix: stdout" "$(printf '[0] out0\n[0] tail0\n[1] out1\n[1] tail1')" "$(sort "$tmp/out")"
check "prefix: stderr" "$(printf '[0] err0\n[1] err1')" "$(sort "$tmp/err")"

# One rank exits 3 while the others sleep: monelrun stops them and exits 3, promptly.
start=$(date +%s%N)
"$run" -n 4 sh -c 'if [ "$MONEL_RANK" = 2 ]; then exit 3; fi; sleep 100' 2>"$tmp/err"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "failure: exit status of the failed rank" 3 "$rc"
if [ "$ms" -lt 10000 ]; then pass "failure: returned in ${ms} ms"; else
  fail "failure: returned in ${ms} ms (limit 10000)"; fi
if grep -q "rank 2 .*exited with status 3" "$tmp/err"; then pass "failure: names the rank"; else
  fail "failure: names the rank" "$(cat "$tmp/err")"; fi

# A rank that ignores SIGTERM is killed after the grace period.
start=$(date +%s%N)
# Rank 0 fails only once rank 1 has its trap in place (it creates the file "armed").
export MONEL_TEST_ARMED="$tmp/armed"
"$run" -n 2 sh -c 'if [ "$MONEL_RANK" = 0 ]; then
    for i in $(seq 200); do [ -e "$MONEL_TEST_ARMED" ] && exit 1; sleep 0.05; done; exit 1; fi
  trap "" TERM; touch "$MONEL_TEST_ARMED"; while :; do sleep 1; done' 2>/dev/null
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
check "failure: survivor ignoring SIGTERM, status" 1 "$rc"
if [ -e "$tmp/armed" ] && [ "$ms" -ge 1500 ] && [ "$ms" -lt 10000 ]; then
  pass "failure: survivor killed after the grace period, ${ms} ms"
else
  fail "failure: survivor killed in ${ms} ms (expected 2 s of grace, then SIGKILL)"
fi

# A rank killed by SIGKILL gives 128 + 9.
"$run" -n 3 sh -c 'if [ "$MONEL_RANK" = 1 ]; then kill -9 $$; fi; sleep 100' 2>"$tmp/err"
check "signal: status 137" 137 "$?"
if grep -q "rank 1 .*killed by signal 9" "$tmp/err"; then pass "signal: names the signal"; else
  fail "signal: names the signal" "$(cat "$tmp/err")"; fi

# SIGTERM to monelrun reaches every rank (each says "ready" once its trap is in place).
"$run" -n 2 sh -c 'trap "echo stopped$MONEL_RANK; exit 0" TERM; echo ready; sleep 100 & wait' \
  >"$tmp/out" 2>/dev/null &
pid=$!
for _ in $(seq 200); do [ "$(grep -c ready "$tmp/out")" = 2 ] && break; sleep 0.05; done
kill -TERM "$pid"
wait "$pid"
check "signal: SIGTERM to monelrun, status" 143 "$?"
check "signal: SIGTERM forwarded" "$(printf '[0] stopped0\n[1] stopped1')" \
  "$(grep -v ready "$tmp/out" | sort)"

# Multi-host options: host 1 of 3 with 2 ranks each runs ranks 2 and 3 of 6.
out=$("$run" -n 2 --hosts 3 --host-index 1 --comm-id 10.0.0.1:29500 \
  sh -c 'echo $MONEL_RANK/$MONEL_NRANKS $MONEL_LOCAL_RANK/$MONEL_LOCAL_SIZE $NCCL_COMM_ID' | sort)
check "multi-host: ranks" \
  "$(printf '[2] 2/6 0/2 10.0.0.1:29500\n[3] 3/6 1/2 10.0.0.1:29500')" "$out"
"$run" -n 2 --hosts 2 --host-index 0 true 2>/dev/null
check "multi-host: --comm-id required" 2 "$?"

# Under a launcher: torchrun style and Open MPI style.
out=$(env RANK=5 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 MASTER_ADDR=10.9.8.7 \
  MASTER_PORT=29500 "$run" \
  sh -c 'echo $MONEL_RANK/$MONEL_NRANKS $MONEL_LOCAL_RANK/$MONEL_LOCAL_SIZE $NCCL_COMM_ID')
check "launcher: torchrun" "5/8 1/4 10.9.8.7:29501" "$out"
out=$(env OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 \
  OMPI_COMM_WORLD_LOCAL_SIZE=2 NCCL_COMM_ID=10.0.0.9:5000 "$run" \
  sh -c 'echo $MONEL_RANK/$MONEL_NRANKS $MONEL_LOCAL_RANK/$MONEL_LOCAL_SIZE $NCCL_COMM_ID')
check "launcher: Open MPI" "3/4 1/2 10.0.0.9:5000" "$out"
# Open MPI says nothing of where rank 0 runs: without NCCL_COMM_ID monelrun stops and says so.
out=$(env -u NCCL_COMM_ID OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 "$run" true 2>&1)
if [ $? = 2 ] && [[ $out == *"under mpirun, set NCCL_COMM_ID=host:port"* ]]; then
  pass "launcher: Open MPI without NCCL_COMM_ID"
else fail "launcher: Open MPI without NCCL_COMM_ID" "$out"; fi

# Under srun (Slurm's variables, no Slurm): rank, size, local rank and size from the per-node
# counts, NCCL_COMM_ID from the step's first node and MONEL_PORT (or the default 29501).
show='echo $MONEL_RANK/$MONEL_NRANKS $MONEL_LOCAL_RANK/$MONEL_LOCAL_SIZE $NCCL_COMM_ID'
slurm() { env -u NCCL_COMM_ID -u MONEL_PORT SLURM_PROCID=5 SLURM_NTASKS=7 SLURM_LOCALID=1 \
  SLURM_NODEID=2 SLURM_JOB_NODELIST='gpu[01-09]' "$@" "$run" sh -c "$show"; }
out=$(slurm SLURM_STEP_NODELIST='gpu[03-05,08],cpu1' SLURM_STEP_TASKS_PER_NODE='2(x3),1')
check "launcher: srun" "5/7 1/2 gpu03:29501" "$out"
out=$(slurm SLURM_STEP_NODELIST='rack[2-3]-n[07-08]' SLURM_STEP_TASKS_PER_NODE='3,3,1' MONEL_PORT=4000)
check "launcher: srun, two ranges, MONEL_PORT" "5/7 1/1 rack2-n07:4000" "$out"
out=$(slurm SLURM_NTASKS_PER_NODE=3)
check "launcher: srun, job node list, SLURM_NTASKS_PER_NODE" "5/7 1/3 gpu01:29501" "$out"
out=$(slurm SLURM_STEP_NODELIST=solo SLURM_STEP_TASKS_PER_NODE='3(x2),1' NCCL_COMM_ID=10.0.0.9:5000)
check "launcher: srun, NCCL_COMM_ID passes through" "5/7 1/1 10.0.0.9:5000" "$out"
out=$(slurm SLURM_STEP_NODELIST='bad[1-2' 2>&1)
if [ $? = 2 ] && [[ $out == *"set NCCL_COMM_ID"* ]]; then pass "launcher: srun, unreadable node list"
else fail "launcher: srun, unreadable node list" "$out"; fi
out=$(env SLURM_PROCID=1 SLURM_NTASKS=4 SLURM_NODEID=0 SLURM_STEP_NODELIST=n1 \
  OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=8 NCCL_COMM_ID=10.0.0.9:5000 "$run" sh -c 'echo $MONEL_RANK/$MONEL_NRANKS')
check "launcher: Open MPI inside a Slurm allocation wins" "3/8" "$out"

# --fake-hosts: MONEL_HOST_ID per rank, cyclic (default) or in blocks.
out=$("$run" -n 6 --fake-hosts 3 sh -c 'echo $MONEL_HOST_ID' | sort | tr '\n' ' ')
check "fake hosts: cyclic" "[0] host0 [1] host1 [2] host2 [3] host0 [4] host1 [5] host2 " "$out"
out=$("$run" -n 6 --fake-hosts 2 --fake-layout block sh -c 'echo $MONEL_HOST_ID' | sort |
  tr '\n' ' ')
check "fake hosts: block" "[0] host0 [1] host0 [2] host0 [3] host1 [4] host1 [5] host1 " "$out"
"$run" -n 2 --hosts 2 --host-index 0 --comm-id 10.0.0.1:1 --fake-hosts 2 true 2>/dev/null
check "fake hosts: refused with --hosts" 2 "$?"

"$run" -h | grep -q "^usage: monelrun" && pass "usage" || fail "usage"

if [ "$fails" -ne 0 ]; then
  echo "run_monelrun: $fails failure(s)"
  exit 1
fi
echo "run_monelrun: all passed"
