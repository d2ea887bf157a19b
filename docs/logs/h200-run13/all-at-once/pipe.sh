#!/bin/bash
# one GPU, ranks as hosts under MPS, the commit's build (8a857d5): plan.sh (OneShot forced and the default, net path) at 2 (full set) and 4 ranks, where the one hop sends to every peer at once, and at 8 ranks with MONEL_NET_ONEHOP_DOUBLING=0 (every peer at once there too)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
mkdir -p $R/plan $R/plan8
OUT=$R/plan PLAN_N="2 4" PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=60 timeout -k 5 200 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log
MONEL_NET_ONEHOP_DOUBLING=0 OUT=$R/plan8 PLAN_N=8 PLAN_ALGOS="OneShot Default" PLAN_PATHS=net PLAN_RUN_TIMEOUT=60 timeout -k 5 150 tests/gpu/plan.sh $B > $R/plan8.log 2>&1
echo "plan8 exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan8.log
cd $OUT && tar czf r.tgz r && rm -rf r
