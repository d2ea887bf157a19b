#!/bin/bash
# one GPU: the step's fences (gpu_costs variants), and AllReduce at 8 hosts, the TCP control
# socket read ahead (buf) against the commit before it (base), 5 rounds, with NVIDIA's NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
mkdir -p /tmp/base && tar xJf archives/base.txz -C /tmp/base || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
archives/gpu_costs 2>&1 | grep -v launches | tee $R/costs-nomps.txt
bench() { # NAME N ROUNDS BIN ARGS CONFIGS
  local name=$1 n=$2 rounds=$3 bin=$4 args=$5 cfg=$6
  HOSTS_BIN=$bin HOSTS_N=$n ROUNDS=$rounds HOSTS_ARGS="$args" HOSTS_MONEL="$cfg" \
    HOSTS_ROWS=$R/$name.rows HOSTS_TIMEOUT=60 timeout -k 5 300 tools/bench/hosts $B $NL > $R/$name.log 2>&1
  echo "$name exit $? at $SECONDS s"; sed -n '/== medians/,$p' $R/$name.log
}
bench ar8 8 5 all_reduce_perf "-b 8 -e 512 -f 8 -n 20 -w 5" "base=@/tmp/base/lib buf"
cd $OUT && tar czf r.tgz r && rm -rf r
