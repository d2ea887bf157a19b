#!/bin/bash
# one GPU, ranks as hosts under MPS, the build of 191c133 (the code of 5aa56b5) against NVIDIA's
# NCCL through the same clients, rotating rounds: AllReduce 8 B-128 MB at 2 and 4 hosts and
# Broadcast at 4 hosts (5 rounds), AllGather and ReduceScatter at 4 hosts (3 rounds)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
nproc > $R/machine.txt; nvidia-smi -L >> $R/machine.txt
bench() { # NAME N ROUNDS BIN ARGS LIMIT
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_ROWS=$R/$1-rows.txt HOSTS_TIMEOUT=60 \
    timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log | tail -3
}
A="-b 8 -e 128M -f 8 -n 20 -w 5"
bench ar2 2 5 all_reduce_perf "$A" 120
bench ar4 4 5 all_reduce_perf "$A" 140
bench bc4 4 5 broadcast_perf "$A" 120
bench ag4 4 3 all_gather_perf "$A" 100
[ $SECONDS -lt 420 ] && bench rs4 4 3 reduce_scatter_perf "$A" $((525 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
