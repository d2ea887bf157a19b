#!/bin/bash
# one GPU: the one hop of every collective and channel 0 at first use: lazy.sh, footprint, plan.sh Default on the net path (2 and 4 ranks as hosts)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn
{ nvidia-smi -L; nproc; } | tee $OUT/machine.txt
mkdir -p $OUT/plan
OUT=$OUT/plan PLAN_N="2 4" PLAN_ALGOS=Default PLAN_PATHS=net PLAN_RUN_TIMEOUT=100 timeout -k 5 260 tests/gpu/plan.sh $B > $OUT/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)|plan chose" $OUT/plan.log
(cd $OUT && tar czf plan.tar.gz plan && rm -rf plan)
mkdir -p $OUT/next
OUT=$OUT/next NEXT_STEPS="lazy footprint" FOOT_SECONDS=6 timeout -k 5 $((570 - SECONDS)) tests/gpu/next-run $B > $OUT/next.log 2>&1
echo "next-run exit $? at $SECONDS s"; cat $OUT/next.log | tail -30
