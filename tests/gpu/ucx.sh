#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The GPU engine across hosts over the UCX network (NCCL_NET=UCX), on the GPU machine:
#   1. which UCX is used: MONEL_UCX_LIB when set; else the CUDA-aware wheel carried in .whl/
#      (libucx_cu13-*.whl or libucx_cu12-*.whl, installed with pip into /tmp/ucx-site, whose
#      libucp.so.0 is /tmp/ucx-site/libucx/lib/libucp.so.0; UCX finds its transport modules in
#      libucx/lib/ucx/ beside it); else the system's libucp.so.0;
#   2. tests/gpu/run-net with NCCL_NET=UCX (ranks as hosts, --fake-hosts; with one GPU the ranks
#      share it): the exact-check matrix, the matrix in CUDA graphs, the network forced on one
#      host; UCX picks its own transports (between processes of one machine: shared memory);
#   3. the same runs that cross "hosts" with UCX_TLS=tcp,cuda_copy,self: UCX's network path as
#      between hosts without RDMA;
#   4. GPUDirect RDMA's path (MONEL_NET_GDR): those runs again with MONEL_NET_GDR=1, the slots of
#      the GPU network FIFOs in GPU memory, registered with UCX as CUDA memory (which UCX moves
#      over TCP with cuda_copy here: no RDMA NIC is needed), each receive flushed before its tail
#      moves; and with MONEL_NET_GDR=0, the slots in pinned host memory. Each connection's INFO
#      line names its path: "... via NET/UCX/0/GDRDMA" (slots in GPU memory) or "... via
#      NET/UCX/0" (staged); every one of a run must name the path asked for. Then
#      MONEL_NET_GDR=1 over Socket, which cannot register GPU memory: init fails, saying so;
#   5. with 2 GPUs or more: PyTorch DDP across two nodes (tests/torch/run-nnodes) over UCX.
# Every run must log its GPU network connections "over UCX", UCX's start line, and no receive
# comm closed with receives posted (net.h's close contract). Every run has a time limit
# (tests/gpu/run-net: NET_RUN_TIMEOUT, 900 s a run; NET_LARGE, 16M+3, the matrix's largest count).
# Usage: tests/gpu/ucx.sh BUILD_DIR   (a build with the CUDA engine and UCX's headers; logs in
# $OUT). UCX_PARTS="default tcp gdr ddp" (the default: all) runs only the parts named: default
# (2), tcp (3), gdr (4), ddp (5). The wheel, fetched where pip reaches PyPI, from the
# repository's root:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
#     -d .whl libucx-cu12==1.22.0        # or libucx-cu13 for CUDA 13 drivers
# Prints PASS/FAIL per part and "PASS tests/gpu/ucx.sh" or "FAIL tests/gpu/ucx.sh".
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/gpus.sh
B=$(cd "${1:-build}" && pwd)
LOG=${OUT:-$(mktemp -d)}
rc=0
if [ -z "${MONEL_UCX_LIB:-}" ]; then
  whl=$(ls .whl/libucx_cu13-*.whl .whl/libucx_cu12-*.whl 2>/dev/null | head -1)
  if [ -n "$whl" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/ucx-site "$whl" || { echo "FAIL tests/gpu/ucx.sh: could not install $whl"; exit 1; }
    export MONEL_UCX_LIB=/tmp/ucx-site/libucx/lib/libucp.so.0
  fi
fi
export NCCL_NET=UCX MONEL_UCX_LIB=${MONEL_UCX_LIB:-libucp.so.0}
echo "== UCX: $MONEL_UCX_LIB"
[ -x /tmp/ucx-site/libucx/bin/ucx_info ] && /tmp/ucx-site/libucx/bin/ucx_info -v | head -3

# check NAME DIR: every net-*.log of DIR says "over UCX", UCX started, no receive posted at close
check() {
  local name=$1 dir=$2 logs over start posted
  logs=$(ls "$dir"/net-*.log 2>/dev/null | grep -v latency)
  [ -z "$logs" ] && { echo "FAIL $name: no logs in $dir"; rc=1; return; }
  over=$(cat $logs | grep -c 'GPU network connections: [0-9]* over UCX')
  start=$(cat $logs | grep -c 'NET/UCX: UCX [0-9.]* (')
  posted=$(cat $logs | grep -c 'receive comm.* closed with [0-9]* receives posted')
  grep -h 'NET/UCX: UCX [0-9.]* (' $logs | sed 's/^.*NET\/UCX: //' | sort | uniq -c | head -3
  if [ "$over" -gt 0 ] && [ "$start" -gt 0 ] && [ "$posted" = 0 ] &&
    [ "$(cat $logs | grep -c 'GPU network connections: [0-9]* over' )" = "$over" ]; then
    echo "PASS $name: $over ranks' GPU network connections over UCX, none closed with a receive posted"
  else
    echo "FAIL $name: $over ranks over UCX, $start UCX start lines, $posted receive comms closed with receives posted"
    rc=1
  fi
}

# part NAME: whether UCX_PARTS names it
part() { [[ " ${UCX_PARTS:-default tcp gdr ddp} " == *" $1 "* ]]; }

if part default; then
mkdir -p "$LOG/ucx-default"
OUT=$LOG/ucx-default NET_LATENCY=1 tests/gpu/run-net "$B" 2>&1 | tee "$LOG/ucx-default.log" | grep -E '^(PASS|FAIL)' || true
grep -q '^PASS tests/gpu/run-net' "$LOG/ucx-default.log" || rc=1
check "run-net over UCX (UCX's own transports)" "$LOG/ucx-default"
fi

if part tcp; then
mkdir -p "$LOG/ucx-tcp"
OUT=$LOG/ucx-tcp UCX_TLS=tcp,cuda_copy,self NET_ONLY="hosts2-procs hosts2-graph" NET_LATENCY=0 \
  tests/gpu/run-net "$B" 2>&1 | tee "$LOG/ucx-tcp.log" | grep -E '^(PASS|FAIL)' || true
grep -q '^PASS tests/gpu/run-net' "$LOG/ucx-tcp.log" || rc=1
check "run-net over UCX with UCX_TLS=tcp,cuda_copy,self" "$LOG/ucx-tcp"
fi

# paths NAME DIR WANT: every connection's INFO line of DIR's logs names the path WANT (gdr:
# ".../GDRDMA", staged: none), and there are some
paths() {
  local name=$1 dir=$2 want=$3 logs gdr staged
  logs=$(ls "$dir"/net-*.log 2>/dev/null | grep -v latency)
  [ -z "$logs" ] && { echo "FAIL $name: no logs in $dir"; rc=1; return; }
  gdr=$(cat $logs | grep -c ' via NET/UCX/[0-9]*/GDRDMA$')
  staged=$(cat $logs | grep -c ' via NET/UCX/[0-9]*$')
  grep -h 'GPU network FIFOs: ' $logs | sed 's/^.*GPU network FIFOs: //' | sort | uniq -c | head -3
  if { [ "$want" = gdr ] && [ "$gdr" -gt 0 ] && [ "$staged" = 0 ]; } ||
    { [ "$want" = staged ] && [ "$staged" -gt 0 ] && [ "$gdr" = 0 ]; }; then
    echo "PASS $name: $gdr connections with their slots in GPU memory (GDRDMA), $staged staged through host memory"
  else
    echo "FAIL $name: $gdr connections named GDRDMA and $staged staged, expected only $want ones"
    rc=1
  fi
}
# MONEL_NET_GDR unset (auto): GPU memory only where UCX has an RDMA transport and CUDA memory
part default && paths "MONEL_NET_GDR unset (auto) over UCX's own transports" "$LOG/ucx-default" \
  "$(grep -qh 'RDMA yes; CUDA memory yes' "$LOG"/ucx-default/net-*.log 2>/dev/null && echo gdr || echo staged)"

if part gdr; then
for gdr in 1 0; do
  want=$([ $gdr = 1 ] && echo gdr || echo staged)
  mkdir -p "$LOG/ucx-gdr$gdr"
  OUT=$LOG/ucx-gdr$gdr MONEL_NET_GDR=$gdr UCX_TLS=tcp,cuda_copy,self \
    NET_ONLY="hosts2-procs hosts2-graph forced-all" NET_LATENCY=0 \
    tests/gpu/run-net "$B" 2>&1 | tee "$LOG/ucx-gdr$gdr.log" | grep -E '^(PASS|FAIL)' || true
  grep -q '^PASS tests/gpu/run-net' "$LOG/ucx-gdr$gdr.log" || rc=1
  check "run-net over UCX (tcp,cuda_copy,self) with MONEL_NET_GDR=$gdr" "$LOG/ucx-gdr$gdr"
  paths "MONEL_NET_GDR=$gdr: every connection's path" "$LOG/ucx-gdr$gdr" "$want"
done

# MONEL_NET_GDR=1 on a network that cannot register GPU memory (Socket): init fails, saying so.
NCCL_NET=Socket MONEL_NET_GDR=1 LD_LIBRARY_PATH=$B/lib NCCL_DEBUG=WARN timeout -k 10 120 \
  "$B/bin/monelrun" -n 2 --fake-hosts 2 "$B/tests/gpu_matrix" --mode procs --quick \
  $([ "$(gpu_count)" = 1 ] && echo --share-gpus) \
  >"$LOG/ucx-gdr-refused.log" 2>&1
st=$?
if [ "$st" != 0 ] && [ "$st" != 124 ] && grep -q 'MONEL_NET_GDR=1 asks for .* cannot register GPU memory' "$LOG/ucx-gdr-refused.log"; then
  echo "PASS MONEL_NET_GDR=1 over Socket: init failed (exit $st) with the sentence"
  grep -m1 -o 'MONEL_NET_GDR=1 asks for .*' "$LOG/ucx-gdr-refused.log" | cut -c1-160
else
  echo "FAIL MONEL_NET_GDR=1 over Socket: exit $st, sentence $(grep -c 'MONEL_NET_GDR=1 asks for' "$LOG/ucx-gdr-refused.log") times"
  tail -5 "$LOG/ucx-gdr-refused.log"
  rc=1
fi
fi

if ! part ddp; then
  :
elif [ "$(gpu_count)" -ge 2 ]; then
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET OUT=$LOG tests/torch/run-nnodes "$B" >"$LOG/ucx-ddp.log" 2>&1
  st=$?
  n=$(cat "$LOG"/torch-nnodes-2nodes.log 2>/dev/null | grep -c 'Using network UCX')
  if [ "$st" = 0 ] && [ "$n" -gt 0 ]; then echo "PASS DDP across two nodes over UCX ($n ranks)"; else
    echo "FAIL DDP across two nodes over UCX: exit $st, $n ranks used UCX"; rc=1; fi
else
  echo "== DDP across two nodes: left out on one GPU (tests/torch/run-nnodes takes a GPU per node)"
fi
if [ $rc = 0 ]; then echo "PASS tests/gpu/ucx.sh"; else echo "FAIL tests/gpu/ucx.sh"; fi
exit $rc
