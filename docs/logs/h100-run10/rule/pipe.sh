#!/bin/bash
# one GPU, 4 and 8 ranks as hosts under MPS: Socket's helper threads from the ranks sharing the cores (this tree's default) against 2 a connection (the old default) and NCCL; AllGather/ReduceScatter/Broadcast at 4 hosts
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|NUMA node\(s\)|^CPU\(s\)"; } | tee $OUT/machine.txt
. tests/gpu/mps.sh; mps_start
for n in 2 4; do
  LD_LIBRARY_PATH=$B/lib NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET timeout -k 5 40 $B/bin/monelrun -n $n --fake-hosts $n $B/bin/all_reduce_perf -b 16M -e 16M -n 2 -w 1 2>&1 | grep -E "helper thread|Avg bus" | head -3
done | tee $OUT/info.txt
mps_stop
A="-b 8 -e 128M -f 8 -n 10 -w 3"
HOSTS_N=8 ROUNDS=4 HOSTS_ARGS="$A" HOSTS_TIMEOUT=60 HOSTS_ROWS=$OUT/ar8-rows.txt \
  HOSTS_MONEL="default t2=NCCL_SOCKET_NTHREADS=2" timeout -k 5 250 tools/bench/hosts $B $NL > $OUT/ar8.log 2>&1
echo "ar8 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar8.log; sed -n '/== medians/,$p' $OUT/ar8.log
HOSTS_N=4 ROUNDS=4 HOSTS_ARGS="$A" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/ar4-rows.txt \
  HOSTS_MONEL="default t2=NCCL_SOCKET_NTHREADS=2" timeout -k 5 150 tools/bench/hosts $B $NL > $OUT/ar4.log 2>&1
echo "ar4 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar4.log; sed -n '/== medians/,$p' $OUT/ar4.log
for c in all_gather reduce_scatter broadcast; do
  HOSTS_BIN=${c}_perf HOSTS_N=4 ROUNDS=3 HOSTS_ARGS="-b 64 -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/$c-rows.txt \
    HOSTS_MONEL="default" timeout -k 5 100 tools/bench/hosts $B $NL > $OUT/$c.log 2>&1
  echo "$c exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/$c.log; sed -n '/== medians/,$p' $OUT/$c.log
done
