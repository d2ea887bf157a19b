#!/bin/bash
# one GPU, ranks as hosts under MPS: HEAD against the readiness scan (a quiet receive comm's
# control socket is read only once an epoll scan saw bytes there), and the scan with every message
# on the control socket (MONEL_X_INLINE_MAX=1 GB); NVIDIA's NCCL. AllReduce 8-128 MB at 8 hosts,
# 8 B-32 KB at 8 and 2 hosts; 3 rounds; then rank_footprint of the scan at 8 hosts.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_SET_THREAD_NAME=1
mkdir -p /tmp/bn /tmp/var $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/var.txz -C /tmp/var || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib V=/tmp/var/scan/lib
bench() { # NAME N ROUNDS BIN ARGS LIMIT [CONFIGS]
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=${7:-default} \
    HOSTS_ROWS=$R/$1-rows.txt HOSTS_TIMEOUT=60 timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log | tail -3
  sed -n '/== medians/,$p' $R/$1.log
}
bench ar8 8 3 all_reduce_perf "-b 8M -e 128M -f 2 -n 10 -w 3" 200 "default scan=@$V scaninl=@$V,MONEL_X_INLINE_MAX=1073741824"
bench ar8s 8 3 all_reduce_perf "-b 8 -e 32K -f 8 -n 20 -w 5" 80 "default scan=@$V"
bench ar2s 2 3 all_reduce_perf "-b 8 -e 32K -f 8 -n 20 -w 5" 60 "default scan=@$V"
. tests/gpu/mps.sh; mps_start
LD_LIBRARY_PATH=$V timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
  'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
  $B/bin/rank_footprint --gpu --idle 0.1 --bytes 16777216 --iters 100 > $R/fp.log 2>&1
echo "fp exit $?"; grep -o "x AllReduce.*" $R/fp.log | head -2 | cut -c1-330
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
