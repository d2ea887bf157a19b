#!/bin/bash
# one GPU, ranks as hosts under MPS: the final library's helper-thread choice (INFO) at 2 and 4 ranks, then a rank's footprint at 2, 8 and 16 ranks (8-byte AllReduce: the one hop) and at 16 with the ring alone
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn
{ nvidia-smi -L; nproc; } | tee $OUT/machine.txt
. tests/gpu/mps.sh; mps_start
for n in 2 4; do
  LD_LIBRARY_PATH=$B/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout -k 5 40 $B/bin/monelrun -n $n --fake-hosts $n \
    sh -c 'export MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/all_reduce_perf -b 16M -e 16M -n 2 -w 1 2>&1 | grep -E "helper thread|^\[0\] +16777216" | sort | uniq -c | head -4
done | tee $OUT/info.txt
echo "info at $SECONDS s"
OUT=$OUT/foot FOOT_N="2 8 16" FOOT_SECONDS=6 FOOT_INIT_S=60 timeout -k 5 150 tests/gpu/footprint $B 2>&1 | tee $OUT/footprint.txt
echo "footprint at $SECONDS s"
OUT=$OUT/foot-ring MONEL_NET_ONEHOP_MAX=0 FOOT_N="16" FOOT_SECONDS=6 FOOT_INIT_S=60 timeout -k 5 80 tests/gpu/footprint $B 2>&1 | tee $OUT/footprint-ring.txt
echo "ring at $SECONDS s"
mps_stop
