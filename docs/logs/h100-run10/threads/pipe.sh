#!/bin/bash
# one GPU, 2/4/8 ranks as hosts under MPS: AllReduce over Socket with one TCP helper thread per connection (and 4 channels), against the default and NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|NUMA node\(s\)|^CPU\(s\)"; } | tee $OUT/machine.txt
HOSTS_N=2 ROUNDS=5 HOSTS_ARGS="-b 256K -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/ar2-rows.txt \
  HOSTS_MONEL="default th1=NCCL_SOCKET_NTHREADS=1" timeout -k 5 150 tools/bench/hosts $B $NL > $OUT/ar2.log 2>&1
echo "ar2 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar2.log; sed -n '/== medians/,$p' $OUT/ar2.log
C="default th1=NCCL_SOCKET_NTHREADS=1 th1ch4=NCCL_SOCKET_NTHREADS=1,MONEL_NET_CHANNELS=4,MONEL_NET_P2P_CHANNELS=4"
HOSTS_N=4 ROUNDS=4 HOSTS_ARGS="-b 2M -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/ar4-rows.txt \
  HOSTS_MONEL="$C" timeout -k 5 180 tools/bench/hosts $B $NL > $OUT/ar4.log 2>&1
echo "ar4 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar4.log; sed -n '/== medians/,$p' $OUT/ar4.log
HOSTS_N=8 ROUNDS=4 HOSTS_ARGS="-b 2M -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=60 HOSTS_ROWS=$OUT/ar8-rows.txt \
  HOSTS_MONEL="$C" timeout -k 5 260 tools/bench/hosts $B $NL > $OUT/ar8.log 2>&1
echo "ar8 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar8.log; sed -n '/== medians/,$p' $OUT/ar8.log
