#!/bin/bash
# one GPU, ranks as hosts under MPS, the commit's build (8a857d5): plan.sh (OneShot forced and Default, net path) at 8 ranks; lazy.sh; AllGather and ReduceScatter 8 B-128 MB at 4 hosts, Broadcast and Reduce 8 B-32 KB at 4 hosts, Broadcast 8 B-4 KB in CUDA graphs (-G 1), AllReduce 8 B-256 KB at 8 hosts, all against NCCL, 5 rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan $R/lazy
OUT=$R/plan PLAN_N=8 PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=60 timeout -k 5 150 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
OUT=$R/lazy LAZY_TIMEOUT=40 timeout -k 5 100 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
echo "lazy exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|   rank" $R/lazy.log
bench() { # NAME N LIMIT BIN ROUNDS ARGS
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$5 HOSTS_ARGS="$6" HOSTS_TIMEOUT=60 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 $3 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
F="-b 8 -e 128M -f 8 -n 20 -w 5"
S="-b 8 -e 32K -f 8 -n 20 -w 5"
bench ar8 8 60 all_reduce_perf 5 "-b 8 -e 256K -f 8 -n 20 -w 5"
bench ag4 4 90 all_gather_perf 5 "$F"
bench rs4 4 90 reduce_scatter_perf 5 "$F"
bench bc4 4 50 broadcast_perf 5 "$S"
bench red4 4 50 reduce_perf 5 "$S"
bench bc4g 4 $((585 - SECONDS)) broadcast_perf 5 "-b 8 -e 4K -f 8 -n 20 -w 5 -G 1"
cd $OUT && tar czf r.tgz r && rm -rf r
