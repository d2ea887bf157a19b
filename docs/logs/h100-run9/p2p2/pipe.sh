#!/bin/bash
# one GPU, ranks as hosts under MPS: Socket on the GPU engine, this tree (2 hosts: the ring) against a9adf1a and NVIDIA's NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/bp
tar xJf archives/bn.txz -C /tmp/bn && tar xJf archives/bp.txz -C /tmp/bp || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|NUMA node\(s\)"; } | tee $OUT/machine.txt
HOSTS_N="2 4" ROUNDS=5 HOSTS_ARGS="-b 8 -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/ar-rows.txt \
  HOSTS_MONEL="head pre=@/tmp/bp/lib" timeout -k 5 320 tools/bench/hosts $B $NL > $OUT/ar.log 2>&1
echo "ar exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar.log; sed -n '/== medians/,$p' $OUT/ar.log
HOSTS_BIN=sendrecv_perf HOSTS_N="2 4" ROUNDS=5 HOSTS_ARGS="-b 8 -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/sr-rows.txt \
  HOSTS_MONEL="head pre=@/tmp/bp/lib" timeout -k 5 240 tools/bench/hosts $B $NL > $OUT/sr.log 2>&1
echo "sr exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/sr.log; sed -n '/== medians/,$p' $OUT/sr.log
