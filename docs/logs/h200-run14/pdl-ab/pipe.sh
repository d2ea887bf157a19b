#!/bin/bash
# one GPU, ranks sharing it: programmatic dependent launch and the tail read by an acquire load
# (this build, "new"): the exact-check matrix of every forced (algorithm, protocol) on 4 ranks,
# same host, host memory and ranks as hosts, in and out of CUDA graphs; then Broadcast and
# AllReduce at 4 hosts against the build before (buf: the read-ahead alone), the new build with
# MONEL_LAUNCH_PDL=0, and NVIDIA's NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/buf $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/buf.txz -C /tmp/buf || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
mkdir -p $R/plan
OUT=$R/plan PLAN_N=4 PLAN_QUICK=1 PLAN_LARGE=1M+3 PLAN_RUN_TIMEOUT=60 timeout -k 5 330 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log | sort | uniq -c | sort -rn | head -40
bench() { # NAME N ROUNDS BIN ARGS CONFIGS
  local name=$1 n=$2 rounds=$3 bin=$4 args=$5 cfg=$6
  HOSTS_BIN=$bin HOSTS_N=$n ROUNDS=$rounds HOSTS_ARGS="$args" HOSTS_MONEL="$cfg" \
    HOSTS_ROWS=$R/$name.rows HOSTS_TIMEOUT=60 timeout -k 5 200 tools/bench/hosts $B $NL > $R/$name.log 2>&1
  echo "$name exit $? at $SECONDS s"; sed -n '/== medians/,$p' $R/$name.log
}
bench bc4 4 3 broadcast_perf "-b 8 -e 4096 -f 8 -n 200 -w 5" "buf=@/tmp/buf/lib new pdl0=MONEL_LAUNCH_PDL=0"
bench ar4 4 3 all_reduce_perf "-b 8 -e 4096 -f 8 -n 50 -w 5" "buf=@/tmp/buf/lib new pdl0=MONEL_LAUNCH_PDL=0"
cd $OUT && tar czf r.tgz r && rm -rf r
