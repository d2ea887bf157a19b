#!/bin/bash
# one GPU, ranks as hosts under MPS: the one hop with a warp per peer (sends, waits and loads of all peers at once): plan.sh OneShot and Default on the net path, lazy.sh; AllReduce at 2/4/8 hosts, AllGather/ReduceScatter/Reduce at 4, against the serial kernel (7c7917d) and NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/bo $OUT/r
tar xJf archives/bn.txz -C /tmp/bn && tar xJf archives/bo.txz -C /tmp/bo || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan $R/lazy
OUT=$R/plan PLAN_N="2 4" PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=100 timeout -k 5 200 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
OUT=$R/lazy LAZY_TIMEOUT=60 timeout -k 5 120 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
echo "lazy exit $? at $SECONDS s"; grep -E "^(PASS|FAIL) (colls|tests)" $R/lazy.log
CFG="default serial=@/tmp/bo/lib"
bench() { # NAME BIN N ARGS LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=4 HOSTS_ARGS="$4" HOSTS_TIMEOUT=30 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$CFG" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar8 all_reduce_perf 8 "-b 8 -e 32K -f 8 -n 20 -w 5" 100
bench ar4 all_reduce_perf 4 "-b 8 -e 32K -f 8 -n 20 -w 5" 70
bench ar2 all_reduce_perf 2 "-b 8 -e 32K -f 8 -n 20 -w 5" 60
bench ag4 all_gather_perf 4 "-b 64 -e 64K -f 8 -n 20 -w 5" 70
bench rs4 reduce_scatter_perf 4 "-b 64 -e 64K -f 8 -n 20 -w 5" 70
bench red4 reduce_perf 4 "-b 8 -e 16K -f 8 -n 20 -w 5" $((575 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
