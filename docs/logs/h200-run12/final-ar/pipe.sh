#!/bin/bash
# one GPU, ranks as hosts under MPS, the new defaults (512 KB a network ring channel; one data socket a helper thread where ranks have fewer than 4 CPUs): plan.sh Default and Ring on the net path, lazy.sh; then AllReduce 8 B-128 MB at 8, 4 and 2 hosts against NCCL, 5 rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan $R/lazy
OUT=$R/plan PLAN_N="2 4" PLAN_ALGOS="Default Ring" PLAN_PATHS=net PLAN_RUN_TIMEOUT=100 timeout -k 5 200 tests/gpu/plan.sh $B > $R/plan.log 2>&1
pst=$?; echo "plan exit $pst at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
OUT=$R/lazy LAZY_TIMEOUT=60 timeout -k 5 120 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
lst=$?; echo "lazy exit $lst at $SECONDS s"; grep -E "^(PASS|FAIL) (colls|tests)" $R/lazy.log
bench() { # NAME BIN N LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=5 HOSTS_ARGS="-b 8 -e 128M -f 8 -n 20 -w 5" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 $4 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar8 all_reduce_perf 8 230
bench ar4 all_reduce_perf 4 130
bench ar2 all_reduce_perf 2 $((570 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
