#!/bin/bash
# one GPU, ranks as hosts under MPS: recursive doubling from 8 ranks (MONEL_NET_ONEHOP_DOUBLING=8). plan.sh (OneShot forced and Default, net path) at 8 ranks; lazy.sh; AllReduce 8 B-128 MB at 8 hosts against NCCL, 5 rounds; AllReduce 8 B-256 KB at 12 hosts, doubling (default) and every peer at once, 3 rounds; AllGather 8 B-32 KB at 8 hosts, both, 5 rounds; Broadcast 8 B-4 KB at 4 hosts with and without CUDA graphs (-G 1), 3 rounds; CPU time of AllReduce 16 MB at 8 hosts, 2 rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan $R/lazy
OUT=$R/plan PLAN_N=8 PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=60 timeout -k 5 150 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|plan chose" $R/plan.log
OUT=$R/lazy LAZY_TIMEOUT=40 timeout -k 5 100 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
echo "lazy exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|   rank" $R/lazy.log
bench() { # NAME N LIMIT BIN ROUNDS ARGS CONFIGS
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$5 HOSTS_ARGS="$6" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$7" timeout -k 5 $3 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar8 8 240 all_reduce_perf 5 "-b 8 -e 128M -f 8 -n 20 -w 5" "default"
bench ar12 12 70 all_reduce_perf 3 "-b 8 -e 256K -f 8 -n 20 -w 5" "default all=MONEL_NET_ONEHOP_DOUBLING=0"
bench ag8 8 60 all_gather_perf 5 "-b 8 -e 32K -f 8 -n 20 -w 5" "default all=MONEL_NET_ONEHOP_DOUBLING=0"
bench bc4 4 30 broadcast_perf 3 "-b 8 -e 4K -f 8 -n 20 -w 5" "default"
bench bc4g 4 30 broadcast_perf 3 "-b 8 -e 4K -f 8 -n 20 -w 5 -G 1" "default"
. tests/gpu/mps.sh; mps_start
cpu() { # LIBDIR LABEL ROUND
  TIMEFORMAT="$2 round $3: real %R user %U sys %S"
  { time env LD_LIBRARY_PATH=$1 timeout -k 5 30 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c 'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/all_reduce_perf -b 16M -e 16M -n 300 -w 5 > $R/cpu-$2-$3.log 2>&1 ; } 2>> $R/cpu.txt
}
for i in 1 2; do
  [ $SECONDS -lt 540 ] || break
  cpu $NL nccl $i; cpu $B/lib monel $i
done
mps_stop
echo "cpu at $SECONDS s"; cat $R/cpu.txt; grep -h "16777216" $R/cpu-*.log | head -12
cd $OUT && tar czf r.tgz r && rm -rf r
