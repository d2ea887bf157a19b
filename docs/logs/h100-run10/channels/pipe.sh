#!/bin/bash
# one GPU, 8 and 4 ranks as hosts under MPS: AllReduce 2-128 MB over Socket with fewer network channels / TCP helper threads, against NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|NUMA node\(s\)|^CPU\(s\)"; } | tee $OUT/machine.txt
C="default ch4=MONEL_NET_CHANNELS=4,MONEL_NET_P2P_CHANNELS=4 ch2=MONEL_NET_CHANNELS=2,MONEL_NET_P2P_CHANNELS=2 th1=NCCL_SOCKET_NTHREADS=1 ch2th1=MONEL_NET_CHANNELS=2,MONEL_NET_P2P_CHANNELS=2,NCCL_SOCKET_NTHREADS=1"
HOSTS_N=8 ROUNDS=4 HOSTS_ARGS="-b 2M -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=60 HOSTS_ROWS=$OUT/ar8-rows.txt \
  HOSTS_MONEL="$C" timeout -k 5 330 tools/bench/hosts $B $NL > $OUT/ar8.log 2>&1
echo "ar8 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar8.log; sed -n '/== medians/,$p' $OUT/ar8.log
HOSTS_N=4 ROUNDS=3 HOSTS_ARGS="-b 2M -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/ar4-rows.txt \
  HOSTS_MONEL="$C" timeout -k 5 200 tools/bench/hosts $B $NL > $OUT/ar4.log 2>&1
echo "ar4 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar4.log; sed -n '/== medians/,$p' $OUT/ar4.log
