#!/bin/bash
# one GPU, ranks as hosts under MPS: the one hop with every peer at once (block-wide sends, a thread per peer): plan.sh OneShot and Default on the net path, lazy.sh; then 8 B-2 MB, 5 rounds: AllReduce at 2/4/8 hosts against the serial kernel (7c7917d) and NCCL; AllGather/ReduceScatter/Broadcast/Reduce at 4 hosts against NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/bo $OUT/r
tar xJf archives/bn.txz -C /tmp/bn && tar xJf archives/bo.txz -C /tmp/bo || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan $R/lazy
OUT=$R/plan PLAN_N="2 4" PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=100 timeout -k 5 200 tests/gpu/plan.sh $B > $R/plan.log 2>&1
pst=$?; echo "plan exit $pst at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
OUT=$R/lazy LAZY_TIMEOUT=60 timeout -k 5 120 tests/gpu/lazy.sh $B > $R/lazy.log 2>&1
lst=$?; echo "lazy exit $lst at $SECONDS s"; grep -E "^(PASS|FAIL) (colls|tests)" $R/lazy.log
if [ $pst = 0 ] && [ $lst = 0 ]; then
bench() { # NAME BIN N CFG LIMIT [LARGEST]
  HOSTS_BIN=$2 HOSTS_N=$3 ROUNDS=5 HOSTS_ARGS="-b 8 -e ${6:-2M} -f 8 -n 20 -w 5" HOSTS_TIMEOUT=40 HOSTS_ROWS=$R/$1-rows.txt \
    HOSTS_MONEL="$4" timeout -k 5 $5 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $R/$1.log; sed -n '/== medians/,$p' $R/$1.log | grep -v " 0 .*0.00 GB/s"
}
bench ar8 all_reduce_perf 8 "default serial=@/tmp/bo/lib" 150
bench ar4 all_reduce_perf 4 "default serial=@/tmp/bo/lib" 80
bench ar2 all_reduce_perf 2 "default serial=@/tmp/bo/lib" 60
bench ag4 all_gather_perf 4 "default" 60
bench rs4 reduce_scatter_perf 4 "default" 60
bench bc4 broadcast_perf 4 "default" 50
bench bc4hop broadcast_perf 4 "hop=NCCL_ALGO=broadcast:oneshot" 40 256K
bench red4 reduce_perf 4 "default" $((575 - SECONDS))
fi
cd $OUT && tar czf r.tgz r && rm -rf r
