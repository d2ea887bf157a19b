#!/bin/bash
# one GPU, the commit's build (programmatic dependent launch for one-block kernels, waiting before
# it lets the next begin; a step's want word written only when its data is not there yet; the
# sender's system fence by one thread after the barrier): the exact-check matrix of every forced pair on 4 ranks as hosts and
# on 2 ranks on every path, the point-to-point collectives across 4 hosts; AllReduce at 8 hosts
# from 8 B to 128 MB (5 rounds), and Broadcast and AllReduce at 4 hosts from 8 B to 4 KB
# (5 rounds), against NVIDIA's NCCL (Broadcast also against the first build, "first")
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
mkdir -p /tmp/first && tar xJf archives/first.txz -C /tmp/first || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
mkdir -p $R/plan4 $R/plan2
OUT=$R/plan4 PLAN_N=4 PLAN_PATHS=net PLAN_QUICK=1 PLAN_LARGE=1M+3 PLAN_RUN_TIMEOUT=60 timeout -k 5 100 tests/gpu/plan.sh $B > $R/plan4.log 2>&1
echo "plan4 exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan4.log | grep -v "^PASS .*exit 0"; grep -c "^PASS" $R/plan4.log
OUT=$R/plan2 PLAN_N=2 PLAN_QUICK=1 PLAN_LARGE=1M+3 PLAN_RUN_TIMEOUT=60 timeout -k 5 100 tests/gpu/plan.sh $B > $R/plan2.log 2>&1
echo "plan2 exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan2.log | grep -v "^PASS .*exit 0"; grep -c "^PASS" $R/plan2.log
. tests/gpu/mps.sh; mps_start
LD_LIBRARY_PATH=$B/lib timeout -k 5 60 $B/bin/monelrun -n 4 --fake-hosts 4 $B/tests/gpu_matrix --mode procs --share-gpus --colls alltoall,alltoallv,gather,scatter,sendrecv --quick > $R/p2p-net.log 2>&1; echo "p2p net exit $?"; grep -E "FAIL" $R/p2p-net.log | head -3
mps_stop
bench() { # NAME N ROUNDS BIN ARGS LIMIT [CONFIGS]
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=${7:-default} \
    HOSTS_ROWS=$R/$1.rows HOSTS_TIMEOUT=60 timeout -k 5 $6 tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "FAIL|failed" $R/$1.log | tail -2
}
bench bc4 4 5 broadcast_perf "-b 8 -e 4096 -f 8 -n 20 -w 5" 90 "default first=@/tmp/first/lib"
bench ar4 4 5 all_reduce_perf "-b 8 -e 4096 -f 8 -n 20 -w 5" 60
bench ar8 8 5 all_reduce_perf "-b 8 -e 128M -f 8 -n 20 -w 5" 230
cd $OUT && tar czf r.tgz r && rm -rf r
