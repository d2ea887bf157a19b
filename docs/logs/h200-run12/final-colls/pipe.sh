#!/bin/bash
# one GPU, ranks as hosts under MPS, the new defaults: AllGather, ReduceScatter, Broadcast, Reduce 8 B-128 MB at 4 hosts against NCCL, 5 rounds; AllReduce at 4 hosts with one data socket a thread
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
bench() { # NAME BIN N LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=5 HOSTS_ARGS="-b 8 -e 128M -f 8 -n 20 -w 5" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 $4 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ag4 all_gather_perf 4 130
bench rs4 reduce_scatter_perf 4 130
bench bc4 broadcast_perf 4 130
bench red4 reduce_perf 4 110
HOSTS_N=4 ROUNDS=3 HOSTS_ARGS="-b 2M -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/ar4n1-rows.txt HOSTS_MONEL="default n1=NCCL_NSOCKS_PERTHREAD=1" \
  timeout -k 5 $((575 - SECONDS)) tools/bench/hosts $B $NL > $R/ar4n1.log 2>&1
echo "ar4n1 exit $? at $SECONDS s"; sed -n '/== medians/,$p' $R/ar4n1.log
cd $OUT && tar czf r.tgz r && rm -rf r
