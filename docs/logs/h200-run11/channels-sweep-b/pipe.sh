#!/bin/bash
# one GPU, ranks as hosts under MPS: bytes a network channel needs, 512 KB (default) against 128 KB (the earlier default), in sweeps from 8 B (the one hop connects channel 0 of every peer first): AllReduce at 2 and 4 hosts, AllGather at 4, against NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
bench() { # NAME BIN N SMALLEST LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=4 HOSTS_ARGS="-b $4 -e 2M -f 8 -n 20 -w 5" HOSTS_TIMEOUT=30 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default cb128=MONEL_NET_CHANNEL_BYTES=131072" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -E " (262144|2097152) "
}
bench ar2 all_reduce_perf 2 8 50
bench ag4 all_gather_perf 4 64 70
bench ar4 all_reduce_perf 4 8 $((180 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
