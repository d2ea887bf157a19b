#!/usr/bin/env bash
# Many ranks on few GPUs: 32 ranks as 4 processes (4 fake hosts: every pair of processes over the
# network, NCCL_NET=Socket; monelrun --fake-hosts gives each its MONEL_HOST_ID) x 8 rank-threads
# each calling ncclCommInitRank, all on the first GPU under MPS (where it starts), running the
# exact-check matrix (tests/gpu/matrix.c --mode procs --threads 8: the 32- and 64-bit types at
# this rank count) of every collective, AlltoAll(v), Gather, Scatter and the Send/Recv patterns
# included:
#   many-32            the quick matrix, the plan's choices
#   many-32-graph      the same captured in CUDA graphs
#   many-32-ALGO/PROTO each algorithm and protocol forced: NCCL_ALGO=Ring, Tree, OneShot (the one
#                      hop across hosts; the one-shot LL within a host), NCCL_PROTO=Simple, LL,
#                      LL128 (a setting the engine cannot honour for a collective is reported
#                      SKIP with its reason, --allow-unsupported; anything else fails)
#   many-64            64 ranks as 8 processes x 8 threads, the quick matrix (MANY_64=1 only:
#                      it takes the GPU's memory and time of the others together)
# Each rank keeps at most its share of the GPU's blocks (gpu/residency.c), so no kernel waits
# for blocks that cannot become resident; the point-to-point FIFOs are smaller than the default
# (MANY_CHUNK bytes a slot, MONEL_NET_P2P_CHANNELS=2) so that 32 ranks' pinned memory fits.
# Usage: tests/gpu/many.sh BUILD_DIR. Logs go to $OUT (or a new temporary directory): one file a
# run. MANY_RUN_TIMEOUT=240: seconds after which one run is killed (its processes with it);
# MANY_RUNS: the runs to do (default every one above but many-64); MANY_LARGE=64K+3: the large
# count. Prints PASS/FAIL per run and "PASS tests/gpu/many.sh" or "FAIL tests/gpu/many.sh";
# without a GPU, SKIP.
set -u
B=$(cd "${1:-build}" && pwd)
LOG=${OUT:-$(mktemp -d)}
mkdir -p "$LOG"
T=$B/tests/gpu_matrix
RUN=$B/bin/monelrun
LIMIT=${MANY_RUN_TIMEOUT:-240}
LARGE=${MANY_LARGE:-64K+3}
CHUNK=${MANY_CHUNK:-131072}
DEFAULT_RUNS="many-32 many-32-graph many-32-Ring many-32-Tree many-32-OneShot many-32-Simple \
many-32-LL many-32-LL128"
[ "${MANY_64:-0}" = 1 ] && DEFAULT_RUNS="$DEFAULT_RUNS many-64"
RUNS=" ${MANY_RUNS:-$DEFAULT_RUNS} "
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_NET=Socket NCCL_NVLS_ENABLE=0
export NCCL_P2P_NVL_CHUNKSIZE=$CHUNK MONEL_NET_P2P_CHANNELS=2
if [ ! -x "$T" ] || [ ! -x "$RUN" ]; then
  echo "FAIL tests/gpu/many.sh: $T or $RUN is not built (a build with the CUDA engine)"
  exit 1
fi
. "$(dirname "$0")/gpus.sh"
if [ "$(gpu_count)" -lt 1 ]; then
  echo "SKIP tests/gpu/many.sh: no GPU here"
  exit 0
fi
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
. "$(dirname "$0")/mps.sh"
mps_start
trap mps_stop EXIT
echo "== $(nvidia-smi -L | head -n 1), MPS $([ "$mps" = 1 ] && echo started || echo not started here)"

rc=0
summary=()
# run NAME PROCS THREADS [VAR=VALUE...] -- MATRIX_ARGS...: PROCS processes as hosts x THREADS
# rank-threads on the GPU; passes when monelrun exits 0 and rank 0 printed the matrix's PASS.
run() {
  local name=$1 np=$2 nt=$3 st start=$SECONDS
  shift 3
  local vars=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    vars+=("$1")
    shift
  done
  shift
  [[ $RUNS == *" $name "* ]] || return 0
  local log=$LOG/$name.log
  echo "== $name: ${vars[*]} monelrun -n $np --fake-hosts $np matrix --threads $nt $*"
  env "${vars[@]}" LD_LIBRARY_PATH="$B/lib" timeout -k 10 "$LIMIT" "$RUN" -n "$np" \
    --fake-hosts "$np" "$T" --mode procs --threads "$nt" --share-gpus --quick --large "$LARGE" \
    "$@" >"$log" 2>&1
  st=$?
  grep -E '^(\[[0-9]+\] )?(PASS|FAIL|SKIP)' "$log" | head -40
  [ "$st" = 124 ] || [ "$st" = 137 ] && echo "FAIL $name: killed after $LIMIT s"
  local verdict=PASS
  if [ "$st" != 0 ] || ! grep -qE '^(\[0\] )?PASS matrix ' "$log"; then
    verdict=FAIL
    rc=1
    echo "-- the end of $log:"
    grep -v ' INFO ' "$log" | tail -n 10
    mps_restart # a client killed at the limit can leave the daemon refusing the next
  fi
  summary+=("$(printf '%-4s %-20s %5d s  (exit %d)' "$verdict" "$name" $((SECONDS - start)) "$st")")
}

run many-32 4 8 --
run many-32-graph 4 8 -- --graph
for a in Ring Tree OneShot; do run "many-32-$a" 4 8 NCCL_ALGO=$a -- --allow-unsupported; done
for p in Simple LL LL128; do run "many-32-$p" 4 8 NCCL_PROTO=$p -- --allow-unsupported; done
run many-64 8 8 --

echo
echo "== summary"
printf '%s\n' "${summary[@]}"
if [ ${#summary[@]} = 0 ]; then
  echo "FAIL tests/gpu/many.sh: no run selected (MANY_RUNS=${MANY_RUNS:-})"
  exit 1
fi
if [ $rc = 0 ]; then echo "PASS tests/gpu/many.sh"; else echo "FAIL tests/gpu/many.sh"; fi
exit $rc
