#!/bin/bash
# one GPU, ranks as hosts under MPS, the final rule (one helper thread of one data socket where ranks have fewer than 8 CPUs): AllReduce, AllGather, ReduceScatter 8 B-128 MB at 4 hosts against NCCL, 5 rounds; Broadcast and Reduce from 256 KB, 3 rounds; Broadcast 8 B-32 KB with root 1 (rank 0, which reports, at the chain's end), 3 rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
bench() { # NAME BIN ROUNDS ARGS LIMIT
  HOSTS_BIN=$2 HOSTS_N=4 ROUNDS=$3 HOSTS_ARGS="$4" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
F="-b 8 -e 128M -f 8 -n 20 -w 5"
bench ar4 all_reduce_perf 5 "$F" 95
bench ag4 all_gather_perf 5 "$F" 60
bench rs4 reduce_scatter_perf 5 "$F" 60
bench bc4root1 broadcast_perf 3 "-b 8 -e 32K -f 8 -n 20 -w 5 -r 1" 25
bench bc4big broadcast_perf 3 "-b 256K -e 128M -f 8 -n 20 -w 5" 30
bench red4big reduce_perf 3 "-b 256K -e 128M -f 8 -n 20 -w 5" $((290 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
