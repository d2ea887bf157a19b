#!/bin/bash
# one GPU, ranks as hosts under MPS: a rank's footprint at 8 ranks (the one hop) and at 16 with the ring alone, MPS restarted before each run (a killed client can leave it refusing the next)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn
. tests/gpu/mps.sh; mps_start
OUT=$OUT/foot FOOT_N="8" FOOT_SECONDS=6 FOOT_INIT_S=60 timeout -k 5 80 tests/gpu/footprint $B 2>&1 | tee $OUT/footprint-8.txt
echo "8 at $SECONDS s"; mps_restart
OUT=$OUT/foot-ring MONEL_NET_ONEHOP_MAX=0 FOOT_N="16" FOOT_SECONDS=6 FOOT_INIT_S=60 timeout -k 5 80 tests/gpu/footprint $B 2>&1 | tee $OUT/footprint-ring.txt
echo "ring16 at $SECONDS s"; mps_restart
OUT=$OUT/foot-ring8 MONEL_NET_ONEHOP_MAX=0 FOOT_N="8" FOOT_SECONDS=6 FOOT_INIT_S=60 timeout -k 5 80 tests/gpu/footprint $B 2>&1 | tee $OUT/footprint-ring8.txt
echo "ring8 at $SECONDS s"
mps_stop
