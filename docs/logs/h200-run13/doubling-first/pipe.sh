#!/bin/bash
# one GPU, ranks as hosts under MPS: AllReduce's one hop by recursive doubling. plan.sh (OneShot forced and Default, net path) at 3 (full set), 4 and 6 ranks; lazy.sh; then AllReduce 8 B-256 KB at 8 and 4 hosts: NCCL, Monel default (doubling, bound 32 KB), every peer at once (MONEL_NET_ONEHOP_DOUBLING=0), doubling up to 512 KB (big), 5 rounds; AllGather 8 B-32 KB at 4 hosts, default and every peer at once
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan3 $R/plan $R/lazy
# smoke: AllReduce and AllGather at 4 and 3 hosts with the default (doubling); stop here if one fails
. tests/gpu/mps.sh; mps_start
for x in "4 all_reduce_perf" "3 all_reduce_perf" "4 all_gather_perf"; do
  set -- $x
  LD_LIBRARY_PATH=$B/lib timeout -k 5 30 $B/bin/monelrun -n $1 --fake-hosts $1 sh -c 'export MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/$2 -b 8 -e 256K -f 8 -n 5 -w 1 > $R/smoke-$1-$2.log 2>&1
  st=$?; echo "smoke $x exit $st at $SECONDS s"; sed -n 's/^\[0\] //p' $R/smoke-$1-$2.log | grep -E "^ +[0-9]+ " | head -8
  [ $st = 0 ] || { tail -20 $R/smoke-$1-$2.log; mps_stop; cd $OUT && tar czf r.tgz r && rm -rf r; exit 1; }
done
mps_stop
OUT=$R/plan3 PLAN_N=3 PLAN_FULL=1 PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=60 timeout -k 5 120 tests/gpu/plan.sh $B > $R/plan3.log 2>&1
echo "plan3 exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|plan chose" $R/plan3.log
OUT=$R/plan PLAN_N="4 6" PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=60 timeout -k 5 170 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
OUT=$R/lazy LAZY_TIMEOUT=40 timeout -k 5 100 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
echo "lazy exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|   rank" $R/lazy.log
bench() { # NAME N LIMIT BIN LAST CONFIGS
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=5 HOSTS_ARGS="-b 8 -e $5 -f 8 -n 20 -w 5" HOSTS_TIMEOUT=40 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$6" timeout -k 5 $3 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
C3="default all=MONEL_NET_ONEHOP_DOUBLING=0 big=MONEL_NET_ONEHOP_MAX=524288"
bench ar8 8 150 all_reduce_perf 256K "$C3"
bench ar4 4 100 all_reduce_perf 256K "$C3"
bench ag4 4 $((580 - SECONDS)) all_gather_perf 32K "default all=MONEL_NET_ONEHOP_DOUBLING=0"
cd $OUT && tar czf r.tgz r && rm -rf r
