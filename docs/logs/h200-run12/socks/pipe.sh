#!/bin/bash
# one GPU, ranks as hosts under MPS: 8 hosts, fewer network channels and data sockets (the cores are shared); 4 hosts, 8 B-16 MB sweeps with 512 KB a network channel (and at least 2 channels)
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
bench ar8 all_reduce_perf 8 3 "-b 2M -e 128M -f 8 -n 10 -w 3" "default c4=MONEL_NET_CHANNELS=4 c2=MONEL_NET_CHANNELS=2 n1=NCCL_NSOCKS_PERTHREAD=1 c4n1=MONEL_NET_CHANNELS=4,NCCL_NSOCKS_PERTHREAD=1" 260
W="-b 8 -e 16M -f 8 -n 20 -w 5" CF="default ch512=MONEL_NET_CHANNEL_BYTES=524288 ch512min2=MONEL_NET_CHANNEL_BYTES=524288,NCCL_MIN_NCHANNELS=2"
bench ar4 all_reduce_perf 4 3 "$W" "$CF" 110
bench ag4 all_gather_perf 4 3 "$W" "$CF" 90
bench rs4 reduce_scatter_perf 4 3 "$W" "$CF" $((570 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
