#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Every (algorithm, protocol) of the GPU engine, forced, checked exactly on this machine's GPUs
# (one GPU is enough: ranks share it): the exact-check matrix (tests/gpu/matrix.c: every
# collective the ring and tree run x dtype x op x counts {0, 1, 1023, PLAN_LARGE} x roots, in and
# out of place) with NCCL_ALGO and NCCL_PROTO set, then the quick matrix in CUDA graph mode:
#   same-host: one process driving PLAN_N ranks (--mode all): GPU memory FIFOs, so LL128 runs
#     on its own lines;
#   hostmem: the same with NCCL_P2P_DISABLE=1 (FIFOs in pinned host memory);
#   net: one process per rank, every rank its own host (monelrun --fake-hosts): every
#     connection over the network through the proxy; processes under MPS where it can start.
# The pairs are forced through core's plan (NCCL_ALGO / NCCL_PROTO, NCCL's grammar):
# Algorithms: Ring (NCCL_ALGO=Ring), Tree (NCCL_ALGO=allreduce:tree;broadcast:tree;reduce:tree:
# AllGather and ReduceScatter, which have no tree, keep every algorithm with the same protocol),
# Default (neither variable set: the plan's own choice, e.g. the tree for a large AllReduce
# across 4 hosts and the one hop for every small collective but Broadcast, which the run must
# show; net path only), OneShot (NCCL_ALGO=OneShot, Simple: the one hop for all five, Broadcast
# too; net path only, its large count 65535, which fits one slot). Protocols: NCCL_PROTO=Simple,
# LL, LL128.
# Each run logs the plan's choices (NCCL_DEBUG_SUBSYS=TUNING); a run whose log names a pair other
# than the forced one (the protocol for every collective; Ring or OneShot for every collective, or
# Tree for AllReduce, Broadcast and Reduce) fails.
# 2 ranks run the full set, more ranks the quick one (--quick: four dtypes, four ops); across
# hosts 4 ranks make inner tree nodes (a parent and two children).
# Usage: tests/gpu/plan.sh BUILD_DIR. Logs go to $OUT (or a new temporary directory), one per
# run: plan-PATH-ALGO-PROTO[-graph].log.
#   PLAN_N="2 4"          rank counts (default "2 4")
#   PLAN_PATHS="same net" which paths (default "same hostmem net")
#   PLAN_LARGE=16M+3      the large count
#   PLAN_PROTOS, PLAN_ALGOS  subsets (default "Simple LL LL128", "Ring Tree OneShot Default")
#   PLAN_GRAPH=0          no CUDA graph runs
#   PLAN_QUICK=1          the quick set on 2 ranks too;  PLAN_FULL=1  the full set on more ranks
#   PLAN_ARGS             more matrix options
#   PLAN_RUN_TIMEOUT=300  seconds after which one run is killed
# Prints PASS/FAIL per run and "PASS tests/gpu/plan.sh" or "FAIL tests/gpu/plan.sh".
# On a machine with one H100 (about 8 minutes with the build):
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real &&
#   cmake --build build -j16 && PLAN_N="2 4" PLAN_RUN_TIMEOUT=90 tests/gpu/plan.sh build
set -u
B=$(cd "${1:-build}" && pwd)
LOG=${OUT:-$(mktemp -d)}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
T=$B/tests/gpu_matrix
RUN=$B/bin/monelrun
LARGE=${PLAN_LARGE:-16M+3}
COLLS=allreduce,broadcast,reduce,allgather,reducescatter
LIMIT=${PLAN_RUN_TIMEOUT:-300}
for f in "$T" "$RUN"; do
  [ -x "$f" ] || { echo "FAIL tests/gpu/plan.sh: $f is not built (a CUDA build)"; exit 1; }
done
. "$(dirname "$0")/gpus.sh"
NGPUS=$(gpu_count)
[ "$NGPUS" -ge 1 ] || { echo "SKIP tests/gpu/plan.sh: no GPU here"; exit 0; }
. "$(dirname "${BASH_SOURCE[0]}")/mps.sh"
mps_start
echo "== $NGPUS GPUs, MPS $([ $mps = 1 ] && echo on || echo off); logs in $LOG/plan-*.log"
rc=0
summary=()
read -r -a EXTRA <<<"${PLAN_ARGS:-}"
# The plan's choices a log names: "Coll/Algo/Proto" (core/plan.c's TUNING line), sorted, unique.
chosen() {
  grep -oE '\b(AllReduce|Broadcast|Reduce|AllGather|ReduceScatter) of [0-9]+ bytes \(sizes [^)]*\) on [0-9]+ ranks: [A-Za-z]+/[A-Za-z0-9]+,' "$1" |
    sed -E 's/^([A-Za-z]+) of .*ranks: ([A-Za-z]+)\/([A-Za-z0-9]+),$/\1\/\2\/\3/' | sort -u
}
# WANT_ALGO WANT_PROTO (set by the loop; empty: any): the choices must be the forced pair.
# WANT_ONEHOP=1 (the default choice across hosts): the one hop (OneShot/Simple) must be among the
# choices of every collective but Broadcast (the counts 1 and 1023 fit it).
check_chosen() { # LOG
  local bad=0 c coll al pr
  if [ "${WANT_ONEHOP:-0}" = 1 ]; then
    for coll in AllReduce Reduce AllGather ReduceScatter; do
      chosen "$1" | grep -qx "$coll/OneShot/Simple" && continue
      echo "FAIL the plan never chose the one hop for $coll"
      bad=1
    done
  fi
  for c in $(chosen "$1"); do
    IFS=/ read -r coll al pr <<<"$c"
    [ -n "$WANT_PROTO" ] && [ "$pr" != "$WANT_PROTO" ] && bad=1
    [ "$WANT_ALGO" = Ring ] && [ "$al" != Ring ] && bad=1
    [ "$WANT_ALGO" = OneShot ] && [ "$al" != OneShot ] && bad=1
    if [ "$WANT_ALGO" = Tree ]; then
      case $coll in AllReduce | Broadcast | Reduce) [ "$al" != Tree ] && bad=1 ;; esac
    fi
  done
  echo "   plan chose: $(chosen "$1" | tr '\n' ' ')"
  [ -n "$(chosen "$1")" ] || bad=1
  [ $bad = 0 ] || echo "FAIL the plan did not run the forced pair ${WANT_ALGO:-}/${WANT_PROTO:-}"
  return $bad
}
run() { # NAME COMMAND...: the command with the matrix's extra options (PLAN_ARGS)
  local name=$1 log=$LOG/plan-$1.log start=$SECONDS st
  shift
  echo "== $name: $*" | tee "$log"
  LD_LIBRARY_PATH=$B/lib timeout -k 10 "$LIMIT" "$@" "${EXTRA[@]}" >>"$log" 2>&1
  st=$?
  grep -E '^(\[[0-9]+\] )?(PASS|FAIL|SKIP) matrix' "$log" | head -4
  grep -E '^(\[[0-9]+\] )?FAIL' "$log" | grep -v 'FAIL matrix' | head -6
  [ "$st" = 0 ] && ! check_chosen "$log" && st=99
  [ "$st" = 0 ] || { rc=1; tail -n 6 "$log"; }
  # A client killed at the time limit can leave MPS refusing the next ones: start it afresh.
  if [ $mps = 1 ] && { [ "$st" = 124 ] || [ "$st" = 137 ]; }; then
    mps_restart
  fi
  summary+=("$(printf '%-4s %-40s %4d s (exit %d)' "$([ "$st" = 0 ] && echo PASS || echo FAIL)" \
    "$name" $((SECONDS - start)) "$st")")
}
for n in ${PLAN_N:-2 4}; do
  for algo in ${PLAN_ALGOS:-Ring Tree OneShot Default}; do
    a=$algo
    [ "$algo" = Tree ] && a="allreduce:tree;broadcast:tree;reduce:tree"
    protos=${PLAN_PROTOS:-Simple LL LL128}
    [ "$algo" = Default ] && protos=Default
    [ "$algo" = OneShot ] && protos=Simple
    for proto in $protos; do
      for path in ${PLAN_PATHS:-same hostmem net}; do
        name=$path-n$n-$algo-$proto
        env=(NCCL_ALGO="$a" NCCL_PROTO="$proto")
        WANT_ALGO=$algo WANT_PROTO=$proto WANT_ONEHOP=0
        if [ "$algo" = Default ]; then
          [ "$path" = net ] || continue
          env=(-u NCCL_ALGO -u NCCL_PROTO)
          WANT_ALGO="" WANT_PROTO="" WANT_ONEHOP=1
        fi
        [ "$algo" = OneShot ] && [ "$path" != net ] && continue
        large=$LARGE
        [ "$algo" = OneShot ] && large=65535
        size=(--large "$large")
        { [ "$n" -gt 2 ] && [ "${PLAN_FULL:-0}" != 1 ]; } || [ "${PLAN_QUICK:-0}" = 1 ] &&
          size=(--quick --large "$large")
        # One GPU: more than 2 ranks of one process fill it with up to 64 blocks each that wait
        # for each other and cannot all be resident (the ring hangs so, whatever the protocol);
        # across hosts a rank has at most MONEL_NET_CHANNELS (8).
        if [ "$NGPUS" = 1 ] && [ "$n" -gt 2 ] && [ "$path" != net ]; then
          echo "== $name: left out (one GPU, $n ranks in one process)"
          continue
        fi
        case $path in
        same)
          run "$name" env "${env[@]}" "$T" --mode all -n "$n" --share-gpus --colls "$COLLS" \
            "${size[@]}"
          [ "${PLAN_GRAPH:-1}" = 1 ] && run "$name-graph" env "${env[@]}" "$T" --mode all -n "$n" \
            --share-gpus --colls "$COLLS" --quick --large "$large" --graph
          ;;
        hostmem)
          run "$name" env "${env[@]}" NCCL_P2P_DISABLE=1 "$T" --mode all -n "$n" --share-gpus \
            --colls "$COLLS" --quick --large "$large"
          ;;
        net)
          run "$name" env "${env[@]}" "$RUN" -n "$n" --fake-hosts "$n" "$T" --mode procs \
            --share-gpus --colls "$COLLS" "${size[@]}"
          [ "${PLAN_GRAPH:-1}" = 1 ] && run "$name-graph" env "${env[@]}" "$RUN" -n "$n" \
            --fake-hosts "$n" "$T" --mode procs --share-gpus --colls "$COLLS" --quick \
            --large "$large" --graph
          ;;
        esac
      done
    done
  done
done
mps_stop
echo "== summary"
printf '%s\n' "${summary[@]}"
[ $rc = 0 ] && echo "PASS tests/gpu/plan.sh" || echo "FAIL tests/gpu/plan.sh"
exit $rc
