#!/bin/bash
# one GPU, ranks as hosts under MPS, 8 hosts: AllReduce 8-128 MB back to back (-z 0) and with a
# wait after each operation (-z 1): NVIDIA's NCCL as it comes and with a socket helper thread per
# connection (NCCL_SOCKET_NTHREADS=1, NCCL_NSOCKS_PERTHREAD=1), Monel HEAD and the variant with
# every message on the control socket (MONEL_X_INLINE_MAX=1 GB). Then what NCCL says of its
# sockets and channels (NCCL_DEBUG=INFO) at 8 hosts.
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
C="default inl8=@$V,MONEL_X_INLINE_MAX=1073741824 nccl-h1=@$NL,NCCL_SOCKET_NTHREADS=1,NCCL_NSOCKS_PERTHREAD=1"
bench z0 8 3 all_reduce_perf "-b 8M -e 128M -f 2 -n 10 -w 3 -z 0" 260 "$C"
bench z1 8 3 all_reduce_perf "-b 8M -e 128M -f 2 -n 10 -w 3 -z 1" 260 "$C"
. tests/gpu/mps.sh; mps_start
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,TUNING LD_LIBRARY_PATH=$NL timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/all_reduce_perf -b 16M -e 16M -n 2 -w 1 > $R/nccl-info.log 2>&1
echo "info exit $?"; grep -iE "socket|thread|channel" $R/nccl-info.log | grep "^\[0\]" | head -20
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
