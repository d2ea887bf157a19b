#!/bin/bash
# one GPU, the build of 191c133 (the code of 5aa56b5): the exact-check matrix of every forced
# (algorithm, protocol), full set (every collective x dtype x op, counts 0, 1, 1023, 16M+3, roots,
# in and out of place; CUDA graph capture and replay, quick set), 4 ranks as 4 hosts (processes
# under MPS: inner tree nodes) and 4 ranks on the same-host path
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r
for P in net same; do
  mkdir -p $R/plan4-$P
  OUT=$R/plan4-$P PLAN_N=4 PLAN_FULL=1 PLAN_PATHS=$P PLAN_RUN_TIMEOUT=150 timeout -k 5 $(case $P in net) echo 470;; *) echo $((575 - SECONDS));; esac) tests/gpu/plan.sh $B > $R/plan4-$P.log 2>&1
  echo "plan4 $P exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan4-$P.log | grep -v "^PASS .*exit 0" | tail -5; grep -c "^PASS" $R/plan4-$P.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
