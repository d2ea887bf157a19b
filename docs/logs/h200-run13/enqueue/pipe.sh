#!/bin/bash
# one GPU, ranks as hosts under MPS, the commit's build (8a857d5): the host's time per call (-C 1: the time of the loop of calls before the stream synchronises, per call) of Broadcast, Reduce and AllReduce 8 B-4 KB at 4 hosts, NCCL and Monel, 3 rounds; the same calls' times without -C again beside them
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
bench() { # NAME N LIMIT BIN ROUNDS ARGS
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$5 HOSTS_ARGS="$6" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 $3 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
S="-b 8 -e 4K -f 8 -n 50 -w 5"
bench bc4cpu 4 60 broadcast_perf 3 "$S -C 1"
bench bc4 4 60 broadcast_perf 3 "$S"
bench red4cpu 4 60 reduce_perf 3 "$S -C 1"
bench ar4cpu 4 60 all_reduce_perf 3 "$S -C 1"
bench ar8cpu 8 80 all_reduce_perf 3 "$S -C 1"
cd $OUT && tar czf r.tgz r && rm -rf r
