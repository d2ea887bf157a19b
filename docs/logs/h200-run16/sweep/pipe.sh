#!/bin/bash
# one GPU, ranks as hosts under MPS: AllReduce 4-128 MB at 8 hosts: HEAD, smaller FIFO slots
# (NCCL_BUFFSIZE), and a variant whose progress thread sleeps on the network's doorbell (at most
# MONEL_X_SLP_US) instead of yielding while pieces of large messages are in flight; NVIDIA's NCCL.
# Then CPU per thread (with the kernel's part) for 16 MB x 100 at 8 hosts, all three libraries.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/var $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/var.txz -C /tmp/var || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
bench() { # NAME N ROUNDS BIN ARGS LIMIT [CONFIGS]
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=${7:-default} \
    HOSTS_ROWS=$R/$1-rows.txt HOSTS_TIMEOUT=60 timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log | tail -3
  sed -n '/== medians/,$p' $R/$1.log
}
bench ar8 8 3 all_reduce_perf "-b 4M -e 128M -f 2 -n 10 -w 3" 330 "default b512k=NCCL_BUFFSIZE=524288 b1m=NCCL_BUFFSIZE=1048576 slp=@/tmp/var/slp/lib slp20=@/tmp/var/slp/lib,MONEL_X_SLP_US=20"
. tests/gpu/mps.sh; mps_start
for L in $NL $B/lib /tmp/var/slp/lib; do
  echo "== $L" >> $R/cpu.log
  NCCL_SET_THREAD_NAME=1 LD_LIBRARY_PATH=$L timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/rank_footprint --gpu --idle 0.2 --bytes 16777216 --iters 100 >> $R/cpu.log 2>&1
  echo "cpu $L exit $? at $SECONDS s"
done
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
