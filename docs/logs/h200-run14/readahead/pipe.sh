#!/bin/bash
# one GPU, ranks as hosts under MPS: what a small operation's step costs on the GPU (gpu_costs),
# Broadcast at 2 and 4 hosts with 20 and 200 operations a timing (latency against throughput),
# ring LL by the tail against Simple, and the TCP control socket read ahead (buf) against the
# commit before it (base), with NVIDIA's NCCL in the same rounds
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
mkdir -p /tmp/base && tar xJf archives/base.txz -C /tmp/base || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; } | tee $R/machine.txt
archives/gpu_costs > $R/costs-nomps.txt 2>&1; cat $R/costs-nomps.txt
. tests/gpu/mps.sh; mps_start
archives/gpu_costs > $R/costs-mps.txt 2>&1; cat $R/costs-mps.txt
mps_stop
bench() { # NAME N ROUNDS BIN ARGS CONFIGS
  local name=$1 n=$2 rounds=$3 bin=$4 args=$5 cfg=$6
  HOSTS_BIN=$bin HOSTS_N=$n ROUNDS=$rounds HOSTS_ARGS="$args" HOSTS_MONEL="$cfg" \
    HOSTS_ROWS=$R/$name.rows HOSTS_TIMEOUT=60 timeout -k 5 300 tools/bench/hosts $B $NL > $R/$name.log 2>&1
  echo "$name exit $? at $SECONDS s"; tail -n 40 $R/$name.log | grep -E "FAIL|failed" | head -3
}
bench bc4-n20 4 3 broadcast_perf "-b 8 -e 4096 -f 8 -n 20 -w 5" "base=@/tmp/base/lib buf ll=NCCL_PROTO=LL"
bench bc4-n200 4 3 broadcast_perf "-b 8 -e 4096 -f 8 -n 200 -w 5" "base=@/tmp/base/lib buf ll=NCCL_PROTO=LL"
bench bc2-n20 2 3 broadcast_perf "-b 8 -e 4096 -f 8 -n 20 -w 5" "base=@/tmp/base/lib buf"
bench ar4 4 5 all_reduce_perf "-b 8 -e 4096 -f 8 -n 20 -w 5" "base=@/tmp/base/lib buf"
bench ar8 8 3 all_reduce_perf "-b 8 -e 32768 -f 8 -n 20 -w 5" "base=@/tmp/base/lib buf"
cd $OUT && tar czf r.tgz r && rm -rf r
