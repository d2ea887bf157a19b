#!/bin/bash
# one GPU, ranks as hosts under MPS: the one hop's bound per peer (32 KB): plan.sh OneShot (forced, Broadcast too) and Default on the net path; AllGather/ReduceScatter/Reduce/AllReduce at 4 hosts and AllReduce at 8 around the bound, default against the ring alone and NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan
OUT=$R/plan PLAN_N="2 4" PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=100 timeout -k 5 200 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|plan chose" $R/plan.log
CFG="default ring=MONEL_NET_ONEHOP_MAX=0"
bench() { # NAME BIN N ARGS LIMIT
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=4 HOSTS_ARGS="$4" HOSTS_TIMEOUT=30 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$CFG" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ag4 all_gather_perf 4 "-b 16K -e 512K -f 2 -n 20 -w 5" 90
bench rs4 reduce_scatter_perf 4 "-b 16K -e 512K -f 2 -n 20 -w 5" 90
bench ar4 all_reduce_perf 4 "-b 4K -e 128K -f 2 -n 20 -w 5" 90
bench red4 reduce_perf 4 "-b 4K -e 128K -f 2 -n 20 -w 5" 90
bench ar8 all_reduce_perf 8 "-b 4K -e 64K -f 2 -n 20 -w 5" $((570 - SECONDS))
cd $OUT && tar czf r.tgz r && rm -rf r
