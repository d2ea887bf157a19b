#!/bin/bash
# one GPU, ranks as hosts under MPS, the final library (the one hop with every peer at once, 512 KB a network channel): plan.sh Default on the net path; 8 B-16 MB, 5 rounds, against NCCL: AllReduce at 2/4/8 hosts, AllGather/ReduceScatter/Broadcast at 4
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan
OUT=$R/plan PLAN_N="2 4" PLAN_ALGOS="Default" PLAN_PATHS=net PLAN_GRAPH=0 PLAN_RUN_TIMEOUT=60 timeout -k 5 100 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
bench() { # NAME BIN N SMALLEST LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=5 HOSTS_ARGS="-b $4 -e 16M -f 8 -n 20 -w 5" HOSTS_TIMEOUT=40 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar8 all_reduce_perf 8 8 130
bench ar4 all_reduce_perf 4 8 70
bench ar2 all_reduce_perf 2 8 50
bench ag4 all_gather_perf 4 64 50
bench rs4 reduce_scatter_perf 4 64 50
bench bc4 broadcast_perf 4 8 $((480 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
