#!/bin/bash
# one GPU, ranks as hosts under MPS: AllReduce 2-128 MB at 8 hosts, HEAD (191c133) against two
# variants: inl = every message on Socket's control socket (the progress thread moves the bytes,
# no helper threads), yld = the progress thread yields after every pass; and NVIDIA's NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/var $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/var.txz -C /tmp/var || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
bench() { # NAME N ROUNDS BIN ARGS LIMIT [CONFIGS]
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=${7:-default} \
    HOSTS_ROWS=$R/$1-rows.txt HOSTS_TIMEOUT=60 timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log | tail -3
  sed -n '/== medians/,$p' $R/$1.log
}
bench ar8v 8 5 all_reduce_perf "-b 2M -e 128M -f 8 -n 10 -w 3" 260 "default inl=@/tmp/var/v1/lib yld=@/tmp/var/v2/lib"
. tests/gpu/mps.sh; mps_start
for L in /tmp/var/v1/lib /tmp/var/v2/lib; do
  echo "== $L" >> $R/cpu.log
  LD_LIBRARY_PATH=$L timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/rank_footprint --gpu --idle 0.2 --bytes 16777216 --iters 100 >> $R/cpu.log 2>&1
  echo "cpu $L exit $? at $SECONDS s"
done
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
