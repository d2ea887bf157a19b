#!/bin/bash
# one GPU, the build of 191c133 (the code of 5aa56b5): the exact-check matrix of every forced
# (algorithm, protocol), full set (every collective x dtype x op, counts 0, 1, 1023, 16M+3, roots,
# in and out of place; CUDA graph capture and replay), 2 ranks on the same-host path, in pinned
# host memory, and as 2 hosts
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r
nproc > $R/machine.txt; nvidia-smi -L >> $R/machine.txt
for P in net same hostmem; do
  mkdir -p $R/plan2-$P
  OUT=$R/plan2-$P PLAN_N=2 PLAN_PATHS=$P PLAN_RUN_TIMEOUT=120 timeout -k 5 $(case $P in net) echo 240;; same) echo 190;; *) echo $((575 - SECONDS));; esac) tests/gpu/plan.sh $B > $R/plan2-$P.log 2>&1
  echo "plan2 $P exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan2-$P.log | grep -v "^PASS .*exit 0" | tail -5; grep -c "^PASS" $R/plan2-$P.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
