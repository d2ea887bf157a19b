#!/bin/bash
# one GPU, ranks as hosts under MPS: AllReduce 8-128 MB at 8 hosts: HEAD against a variant that
# reads Socket's inline bound from MONEL_X_INLINE_MAX (1 GB: every message on the control socket,
# moved by the progress thread, as NVIDIA's NCCL moves them), with 8, 4 and 2 channels and 2 or 4 MB
# FIFOs; NVIDIA's NCCL. Then CPU per thread for 16 MB x 100 at 8 hosts.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/var $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/var.txz -C /tmp/var || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib V=/tmp/var/inlx/lib
bench() { # NAME N ROUNDS BIN ARGS LIMIT [CONFIGS]
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=${7:-default} \
    HOSTS_ROWS=$R/$1-rows.txt HOSTS_TIMEOUT=60 timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log | tail -3
  sed -n '/== medians/,$p' $R/$1.log
}
I=MONEL_X_INLINE_MAX=1073741824
bench ar8 8 3 all_reduce_perf "-b 8M -e 128M -f 2 -n 10 -w 3" 360 "default inl8=@$V,$I inl4=@$V,$I,MONEL_NET_CHANNELS=4 inl2=@$V,$I,MONEL_NET_CHANNELS=2 inl4b4=@$V,$I,MONEL_NET_CHANNELS=4,NCCL_BUFFSIZE=4194304 inl2b4=@$V,$I,MONEL_NET_CHANNELS=2,NCCL_BUFFSIZE=4194304"
. tests/gpu/mps.sh; mps_start
for C in "$V $I" "$V $I MONEL_NET_CHANNELS=2"; do
  echo "== $C" >> $R/cpu.log
  env $(echo $C | cut -d' ' -f2-) LD_LIBRARY_PATH=${C%% *} timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/rank_footprint --gpu --idle 0.2 --bytes 16777216 --iters 100 >> $R/cpu.log 2>&1
  echo "cpu $C exit $? at $SECONDS s"
done
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
