#!/bin/bash
# one GPU, ranks as hosts under MPS: bytes a channel needs on the network path (MONEL_CHANNEL_BYTES 128 KB default, 256 KB, 512 KB) at 256 KB-4 MB: AllReduce at 2/4/8 hosts, AllGather/ReduceScatter/Broadcast/Reduce at 4, against NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
CFG="default cb256=MONEL_CHANNEL_BYTES=262144 cb512=MONEL_CHANNEL_BYTES=524288"
bench() { # NAME BIN N ARGS LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=4 HOSTS_ARGS="$4 -n 20 -w 5" HOSTS_TIMEOUT=40 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$CFG" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar4 all_reduce_perf 4 "-b 1M -e 4M -f 2" 80
bench ar8 all_reduce_perf 8 "-b 1M -e 4M -f 2" 110
bench ar2 all_reduce_perf 2 "-b 1M -e 4M -f 2" 60
bench ag4 all_gather_perf 4 "-b 2M -e 2M" 40
bench rs4 reduce_scatter_perf 4 "-b 2M -e 2M" 40
bench bc4 broadcast_perf 4 "-b 256K -e 2M -f 8" 40
bench red4 reduce_perf 4 "-b 256K -e 2M -f 8" $((570 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
