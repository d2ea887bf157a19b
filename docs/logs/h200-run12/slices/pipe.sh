#!/bin/bash
# one GPU, ranks as hosts under MPS: the network ring's slices (MONEL_NET_SLICE_BYTES, MONEL_NET_CHUNK_BYTES) and channel bytes against the default and NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
bench() { # NAME BIN N ROUNDS ARGS CFG LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=$4 HOSTS_ARGS="$5" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$6" timeout -k 5 $7 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log
}
S='MONEL_NET_SLICE_BYTES' C='MONEL_NET_CHUNK_BYTES=1048576'
bench ar8 all_reduce_perf 8 3 "-b 2M -e 128M -f 8 -n 10 -w 3" "default s128=$S=131072,$C s64=$S=65536,$C s32=$S=32768,$C s64ring=$S=65536,$C,NCCL_ALGO=allreduce:ring" 300
bench ar4 all_reduce_perf 4 3 "-b 2M -e 16M -f 8 -n 20 -w 5" "default s64=$S=65536,$C s32=$S=32768,$C ch512=MONEL_NET_CHANNEL_BYTES=524288 ch512s64=MONEL_NET_CHANNEL_BYTES=524288,$S=65536,$C" 120
bench ag4 all_gather_perf 4 2 "-b 2M -e 16M -f 8 -n 20 -w 5" "default s64=$S=65536,$C s32=$S=32768,$C ch512s64=MONEL_NET_CHANNEL_BYTES=524288,$S=65536,$C" $((570 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
