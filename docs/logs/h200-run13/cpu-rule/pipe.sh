#!/bin/bash
# one GPU, ranks as hosts under MPS: recursive doubling by the CPU rule (from 8 ranks while each rank has 2 CPUs). The INFO line at 8 and 16 ranks; lazy.sh; AllReduce 8 B-32 KB at 6 ranks (doubling forced from 3 ranks, with 2 more hops for ranks 4 and 5) and 16 ranks (forced from 8; the rule leaves it off) against the default, 3 rounds; AllReduce 8 B-256 KB at 8 hosts, 5 rounds; AllReduce 8 B-128 MB at 4 and 2 hosts against NCCL, 5 rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/lazy
. tests/gpu/mps.sh; mps_start
for n in 8 16; do
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET LD_LIBRARY_PATH=$B/lib timeout -k 5 60 $B/bin/monelrun -n $n --fake-hosts $n sh -c 'export MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/all_reduce_perf -b 8 -e 4K -f 8 -n 5 -w 1 > $R/info-$n.log 2>&1
  echo "info $n exit $? at $SECONDS s"; grep -m1 "collectives in one hop" $R/info-$n.log; grep "wrong\|^\[0\] *[0-9]" $R/info-$n.log | head -3
done
mps_stop
OUT=$R/lazy LAZY_TIMEOUT=40 timeout -k 5 100 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
echo "lazy exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|   rank" $R/lazy.log
bench() { # NAME N LIMIT BIN ROUNDS ARGS CONFIGS
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$5 HOSTS_ARGS="$6" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$7" timeout -k 5 $3 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar6 6 50 all_reduce_perf 3 "-b 8 -e 32K -f 8 -n 20 -w 5" "default dbl=MONEL_NET_ONEHOP_DOUBLING=3"
bench ar16 16 80 all_reduce_perf 3 "-b 8 -e 32K -f 8 -n 20 -w 5" "default dbl=MONEL_NET_ONEHOP_DOUBLING=8"
bench ar8 8 80 all_reduce_perf 5 "-b 8 -e 256K -f 8 -n 20 -w 5" "default"
bench ar4 4 140 all_reduce_perf 5 "-b 8 -e 128M -f 8 -n 20 -w 5" "default"
bench ar2 2 $((585 - SECONDS)) all_reduce_perf 5 "-b 8 -e 128M -f 8 -n 20 -w 5" "default"
cd $OUT && tar czf r.tgz r && rm -rf r
