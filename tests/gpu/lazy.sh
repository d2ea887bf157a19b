#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Point-to-point connections made at their first use across hosts (MONEL_P2P_CONNECT, gpu/net.c),
# on this machine's GPU(s): every rank its own fake host (monelrun --fake-hosts: every pair over
# the network, NCCL_NET=Socket), the ranks sharing the GPUs (under MPS where it starts), one
# gpu_test_gpu_lazy per rank (tests/gpu/test_gpu_lazy.c says what each mode does and checks):
#   p2p-lazy-2, p2p-lazy-4, p2p-eager-2, p2p-eager-4: descriptors before and after init and after
#     each step (Send/Recv with rank^1, again, Send/Recv with rank^2 captured in a CUDA graph at its
#     first use, AlltoAll, again), then large Send/Recv, AlltoAll, Gather, Scatter, checked exactly;
#   colls-lazy-4, colls-eager-4: an 8-float AllReduce as the first operation (the one hop with
#     every peer at once, the default on 4 ranks, which connects channel 0 alone with every
#     peer), then an AlltoAll (the other channels);
#   colls-double-4: the same by recursive doubling (MONEL_NET_ONEHOP_DOUBLING=4: channel 0 with
#     the ranks one bit away, rank^1 and rank^2), then the AlltoAll (rank^3 and the other
#     channels);
#   tree-lazy-4: AllReduce, Broadcast and Reduce on the tree from every root;
#   zero-lazy-4: an AlltoAll with a per-call NCCL_CTA_POLICY_ZERO as the first operation (refused
#     on every rank: the copy-engine path does not cross hosts), then an AlltoAll.
# It passes when every rank of every run says PASS, and:
#   - flat after init: lazily, a rank holds as many descriptors after init at 4 ranks as at 2 (the
#     largest over the ranks, within INIT_SLACK: the bootstrap's own connections), and the ring's
#     network connections it logs ("GPU network connections: K over") are the same K; eagerly, K
#     grows by 2 x MONEL_NET_P2P_CHANNELS per peer and the descriptors by at least the peers' cost
#     measured in the lazy run;
#   - only peers used: lazily, each rank logs one "connected at first use" line per step that
#     brought a new peer, naming it (rank^1, then rank^2, then rank^3 on 4 ranks), the AlltoAll
#     after a refused one names every other rank at once, and so do the one hop (making 2
#     connections a peer: channel 0 each way) and the AlltoAll after it (the other 2 x (NCH-1));
#     eagerly, none;
#   - the program's own checks: no descriptor added by a step without a new peer (none at all
#     eagerly), about the same number for each new peer.
# Usage: tests/gpu/lazy.sh BUILD_DIR. Logs go to $OUT (or a new temporary directory), one per run:
# lazy-NAME.log. LAZY_TIMEOUT=300: seconds after which one run is killed. Prints PASS/FAIL per
# check and "PASS tests/gpu/lazy.sh" or "FAIL tests/gpu/lazy.sh".
set -u
B=$(cd "${1:-build}" && pwd)
LOG=${OUT:-$(mktemp -d)}
mkdir -p "$LOG"
# Two helper threads of two sockets per Socket connection at every rank count: by default a GPU
# comm takes one of one where its ranks on this machine have fewer than 8 CPUs each
# (topo_socket_threads), which changes the sockets of each connection between 2 and 4 ranks on
# one machine, and so the descriptors.
export NCCL_NVLS_ENABLE=0 NCCL_NET=Socket MONEL_NET_P2P_CHANNELS=2 NCCL_SOCKET_NTHREADS=2
export NCCL_NSOCKS_PERTHREAD=2
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET
T=$B/tests/gpu_test_gpu_lazy
RUN=$B/bin/monelrun
LIMIT=${LAZY_TIMEOUT:-300}
INIT_SLACK=4
NCH=$MONEL_NET_P2P_CHANNELS
for f in "$T" "$RUN"; do
  [ -x "$f" ] || { echo "FAIL tests/gpu/lazy.sh: $f is not built (a CUDA build)"; exit 1; }
done
. "$(dirname "$0")/gpus.sh"
NGPUS=$(gpu_count)
[ "$NGPUS" -ge 1 ] || { echo "FAIL tests/gpu/lazy.sh: no GPU here"; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/mps.sh"
mps_start
echo "== $NGPUS GPUs, MPS $([ $mps = 1 ] && echo on || echo off); logs in $LOG/lazy-*.log"
rc=0
pass() { echo "PASS $*"; }
fail() {
  echo "FAIL $*"
  rc=1
}

# run NAME NRANKS P2P_CONNECT MODE [VAR=VALUE...]: one job; passes when every rank says PASS.
run() {
  local name=$1 n=$2 conn=$3 mode=$4 log=$LOG/lazy-$1.log st ok
  shift 4
  echo "== $name"
  LD_LIBRARY_PATH=$B/lib MONEL_P2P_CONNECT=$conn timeout -k 10 "$LIMIT" env "$@" \
    "$RUN" -n "$n" --fake-hosts "$n" "$T" "$mode" >"$log" 2>&1
  st=$?
  ok=$(grep -cE "^\[[0-9]+\] PASS rank [0-9]+: $mode" "$log")
  if [ "$st" = 0 ] && [ "$ok" = "$n" ]; then
    pass "$name: $n ranks checked their data"
  else
    fail "$name: exit $st, $ok of $n ranks passed"
    grep -E '^\[[0-9]+\] FAIL' "$log" | head -8
    grep -v ' INFO ' "$log" | tail -n 8
  fi
  # A client killed at the time limit can leave MPS refusing the next ones: start it afresh.
  if [ $mps = 1 ] && { [ "$st" = 124 ] || [ "$st" = 137 ]; }; then
    mps_restart
  fi
}

# Fields of a rank's "lazy-fds" line: RANK BEFORE INIT S1 S2 S3 S4 S5, one line per rank.
fds() {
  sed -n 's/.*lazy-fds rank \([0-9]*\)\/[0-9]* mode [a-z]*: before init \([0-9]*\), after init \([0-9]*\), steps \(.*\)$/\1 \2 \3 \4/p' "$1"
}
# The largest number of descriptors init gave a rank.
init_max() { fds "$1" | awk 'BEGIN { m = -1 } { if ($3 - $2 > m) m = $3 - $2 } END { print m }'; }
# The fewest descriptors the first new peer (step 1) cost a rank.
peer_min() { fds "$1" | awk 'BEGIN { m = -1 } { if (m < 0 || $4 < m) m = $4 } END { print m }'; }
# The network connections each rank made at init, sorted: "K K K K".
init_conns() {
  grep -o 'rank [0-9]* GPU network connections: [0-9]* over' "$1" | sort -n -k2 |
    awk '{print $6}' | paste -sd' '
}
# The connections rank R's "connected at first use" lines made, one line per line.
made() {
  sed -n "s/.* rank $2 GPU point-to-point connected at first use: .* over [^,]*, \([0-9]*\) more network.*/\1/p" "$1"
}
# The ranks named by rank R's "connected at first use" lines, one line per line.
first_use() {
  sed -n "s/.* rank $2 GPU point-to-point connected at first use: rank \\([0-9 ]*\\) over.*/\\1/p" "$1"
}

run p2p-lazy-2 2 lazy p2p
run p2p-lazy-4 4 lazy p2p
run p2p-eager-2 2 eager p2p
run p2p-eager-4 4 eager p2p
run colls-lazy-4 4 lazy colls
run colls-eager-4 4 eager colls
run colls-double-4 4 lazy colls MONEL_NET_ONEHOP_DOUBLING=4
run tree-lazy-4 4 lazy tree "NCCL_ALGO=allreduce:tree;broadcast:tree;reduce:tree"
run zero-lazy-4 4 lazy zero

# Flat after init (descriptors and connections), growing eagerly.
l2=$(init_max "$LOG/lazy-p2p-lazy-2.log") l4=$(init_max "$LOG/lazy-p2p-lazy-4.log")
e2=$(init_max "$LOG/lazy-p2p-eager-2.log") e4=$(init_max "$LOG/lazy-p2p-eager-4.log")
p=$(peer_min "$LOG/lazy-p2p-lazy-4.log")
echo "   descriptors init gave a rank (largest): lazy $l2 at 2 ranks, $l4 at 4; eager $e2, $e4;" \
  "a new peer costs at least $p"
if [ "$l2" -ge 0 ] && [ "$l4" -ge 0 ] && [ $((l4 - l2)) -le $INIT_SLACK ] &&
  [ $((l2 - l4)) -le $INIT_SLACK ]; then
  pass "lazy: descriptors after init flat from 2 to 4 ranks ($l2, $l4)"
else
  fail "lazy: descriptors after init $l2 at 2 ranks, $l4 at 4 (at most $INIT_SLACK apart)"
fi
if [ "$p" -gt 0 ] && [ "$e4" -ge 0 ] && [ $((e4 - e2)) -ge $((2 * p - INIT_SLACK)) ]; then
  pass "eager: descriptors after init grow with the peers ($e2 at 2 ranks, $e4 at 4)"
else
  fail "eager: descriptors after init $e2 at 2 ranks, $e4 at 4: expected at least 2 peers of $p more"
fi
c=() # init connections per run
for r in lazy-2 lazy-4 eager-2 eager-4; do c+=("$(init_conns "$LOG/lazy-p2p-$r.log")"); done
read -r k _ <<<"${c[0]}"
want=("$k $k" "$k $k $k $k" "$((k + 2 * NCH)) $((k + 2 * NCH))"
  "$((k + 6 * NCH)) $((k + 6 * NCH)) $((k + 6 * NCH)) $((k + 6 * NCH))")
for i in 0 1 2 3; do
  if [ -n "$k" ] && [ "${c[$i]}" = "${want[$i]}" ]; then
    pass "network connections at init, run $i of (lazy 2, lazy 4, eager 2, eager 4): ${c[$i]}"
  else
    fail "network connections at init, run $i of (lazy 2, lazy 4, eager 2, eager 4): '${c[$i]}', expected '${want[$i]}'"
  fi
done

# Only the peers used, at their first use.
bad=0
# expect_first_use RUN RANK PEERS MADE WHY: the rank's "connected at first use" lines of the run
# name PEERS and made MADE connections (one entry a line, joined by commas).
expect_first_use() {
  local got
  got=$(first_use "$LOG/lazy-$1.log" "$2" | paste -sd,)
  [ "$got" = "$3" ] || {
    bad=1
    echo "   rank $2 of $1 connected at first use: '$got', expected '$3'"
  }
  got=$(made "$LOG/lazy-$1.log" "$2" | paste -sd,)
  [ "$got" = "$4" ] || {
    bad=1
    echo "   rank $2 of $1 made '$got' connections at first use, expected '$4' ($5)"
  }
}
for r in 0 1 2 3; do
  got=$(first_use "$LOG/lazy-p2p-lazy-4.log" $r | paste -sd,)
  [ "$got" = "$((r ^ 1)),$((r ^ 2)),$((r ^ 3))" ] || {
    bad=1
    echo "   rank $r of p2p-lazy-4 connected at first use: '$got', expected $((r ^ 1)),$((r ^ 2)),$((r ^ 3))"
  }
  all=$(for q in 0 1 2 3; do [ $q = $r ] || printf '%s ' $q; done)
  got=$(first_use "$LOG/lazy-zero-lazy-4.log" $r | paste -sd,)
  [ "$got" = "${all% }" ] || {
    bad=1
    echo "   rank $r of zero-lazy-4 connected at first use: '$got', expected '${all% }'"
  }
  # The one hop: channel 0 alone with every peer, then the AlltoAll the other channels.
  expect_first_use colls-lazy-4 $r "${all% },${all% }" "6,$((6 * (NCH - 1)))" \
    "channel 0 with 3 peers both ways, then the other channels"
  # Recursive doubling: channel 0 with rank^1 and rank^2, then the AlltoAll every peer's other
  # channels and rank^3's all: 2 x (NCH-1) x 2 + 2 x NCH.
  pair=$(printf '%s\n' $((r ^ 1)) $((r ^ 2)) | sort -n | paste -sd' ')
  expect_first_use colls-double-4 $r "$pair,${all% }" "4,$((6 * NCH - 4))" \
    "channel 0 with 2 peers both ways, then the rest"
  [ -n "$(first_use "$LOG/lazy-tree-lazy-4.log" $r)" ] || {
    bad=1
    echo "   rank $r of tree-lazy-4 connected no tree peer at first use"
  }
done
for r in 0 1; do
  got=$(first_use "$LOG/lazy-p2p-lazy-2.log" $r | paste -sd,)
  [ "$got" = "$((1 - r))" ] || {
    bad=1
    echo "   rank $r of p2p-lazy-2 connected at first use: '$got', expected $((1 - r))"
  }
done
for f in p2p-eager-2 p2p-eager-4 colls-eager-4; do
  if grep -q 'connected at first use' "$LOG/lazy-$f.log"; then
    bad=1
    echo "   $f connected a peer at first use (eager connects every peer at init)"
  fi
done
if [ $bad = 0 ]; then
  pass "each rank connected the peers it used at their first use, one step at a time (none eagerly)"
else
  fail "the peers connected at first use are not those used"
fi

mps_stop
if [ $rc = 0 ]; then echo "PASS tests/gpu/lazy.sh"; else echo "FAIL tests/gpu/lazy.sh"; fi
exit $rc
