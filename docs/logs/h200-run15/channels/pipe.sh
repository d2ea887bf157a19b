#!/bin/bash
# one GPU, ranks as hosts under MPS, HEAD's build (191c133): AllReduce 16-128 MB at 8 hosts with
# 8 (default), 4 and 2 network channels; CPU per thread at 8 hosts, 16 MB; Broadcast 8-512 B at 4
# hosts: ring, tree, one hop, ring LL; against NVIDIA's NCCL, rotating rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
nproc > $R/machine.txt; nvidia-smi -L >> $R/machine.txt
bench() { # NAME N ROUNDS BIN ARGS LIMIT [CONFIGS]
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=${7:-default} \
    HOSTS_ROWS=$R/$1-rows.txt HOSTS_TIMEOUT=60 timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log | tail -3
  sed -n '/== medians/,$p' $R/$1.log
}
bench bc4 4 5 broadcast_perf "-b 8 -e 512 -f 8 -n 20 -w 5" 100 "default tree=NCCL_ALGO=broadcast:tree hop=NCCL_ALGO=broadcast:oneshot ll=NCCL_PROTO=LL"
bench ar8ch 8 5 all_reduce_perf "-b 16M -e 128M -f 8 -n 10 -w 3" 200 "default ch4=MONEL_NET_CHANNELS=4 ch2=MONEL_NET_CHANNELS=2"
. tests/gpu/mps.sh; mps_start
for LIB in $B/lib $NL "$B/lib MONEL_NET_CHANNELS=4"; do
  set -- $LIB
  echo "== $*" >> $R/cpu.log
  ( [ -n "${2:-}" ] && export $2; LD_LIBRARY_PATH=$1 timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/rank_footprint --gpu --idle 1 --bytes 16777216 --iters 100 ) >> $R/cpu.log 2>&1
  echo "cpu $* exit $? at $SECONDS s"
done
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
