#!/bin/bash
# one GPU, 2 ranks as hosts under MPS: Socket, this tree against a9adf1a and NCCL, more rounds: Send/Recv 8 B-256 KB, AllReduce 8 B-16 MB
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/bp
tar xJf archives/bn.txz -C /tmp/bn && tar xJf archives/bp.txz -C /tmp/bp || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
HOSTS_BIN=sendrecv_perf HOSTS_N=2 ROUNDS=8 HOSTS_ARGS="-b 8 -e 256K -f 8 -n 20 -w 5" HOSTS_TIMEOUT=20 HOSTS_ROWS=$OUT/sr2-rows.txt \
  HOSTS_MONEL="head pre=@/tmp/bp/lib" timeout -k 3 70 tools/bench/hosts $B $NL > $OUT/sr2.log 2>&1
echo "sr2 exit $? at $SECONDS s"; sed -n '/== medians/,$p' $OUT/sr2.log
HOSTS_N=2 ROUNDS=6 HOSTS_ARGS="-b 8 -e 16M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=20 HOSTS_ROWS=$OUT/ar2-rows.txt \
  HOSTS_MONEL="head pre=@/tmp/bp/lib" timeout -k 3 85 tools/bench/hosts $B $NL > $OUT/ar2.log 2>&1
echo "ar2 exit $? at $SECONDS s"; sed -n '/== medians/,$p' $OUT/ar2.log
