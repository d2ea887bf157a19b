#!/bin/bash
# one GPU, 4 ranks as hosts under MPS: AllGather, ReduceScatter, Broadcast, Reduce 8 B-2 MB: the one hop of every collective (default), without it (MONEL_NET_ONEHOP_MAX=0: the ring, as before) and with a larger bound, against NCCL; AllReduce at 8 hosts 8 B-256 KB
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; } | tee $OUT/machine.txt
CFG="default ring=MONEL_NET_ONEHOP_MAX=0 hop2m=MONEL_NET_ONEHOP_MAX=2097152"
for c in all_gather reduce_scatter broadcast reduce; do
  HOSTS_BIN=${c}_perf HOSTS_N=4 ROUNDS=4 HOSTS_ARGS="-b 8 -e 2M -f 8 -n 20 -w 5" HOSTS_TIMEOUT=30 HOSTS_ROWS=$OUT/$c-rows.txt \
    HOSTS_MONEL="$CFG" timeout -k 5 $((110)) tools/bench/hosts $B $NL > $OUT/$c.log 2>&1
  echo "$c exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/$c.log; sed -n '/== medians/,$p' $OUT/$c.log
done
HOSTS_N=8 ROUNDS=4 HOSTS_ARGS="-b 8 -e 256K -f 8 -n 20 -w 5" HOSTS_TIMEOUT=40 HOSTS_ROWS=$OUT/ar8-rows.txt \
  HOSTS_MONEL="default hop2m=MONEL_NET_ONEHOP_MAX=2097152" timeout -k 5 $((575 - SECONDS)) tools/bench/hosts $B $NL > $OUT/ar8.log 2>&1
echo "ar8 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar8.log; sed -n '/== medians/,$p' $OUT/ar8.log
