#!/bin/bash
# one GPU: programmatic dependent launch and the acquire-load tail (this build, "new") checked
# exactly on 2 ranks on every path (same host, host memory, ranks as hosts), the point-to-point
# collectives on the same host and across 4 hosts, the one-host A/B against the build before
# (buf), and Broadcast at 4 hosts from 8 B to 128 MB against NVIDIA's NCCL
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/buf $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/buf.txz -C /tmp/buf || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
mkdir -p $R/plan
OUT=$R/plan PLAN_N=2 PLAN_QUICK=1 PLAN_LARGE=1M+3 PLAN_RUN_TIMEOUT=60 timeout -k 5 230 tests/gpu/plan.sh $B > $R/plan.log 2>&1
echo "plan exit $? at $SECONDS s"; grep -E "^(PASS|FAIL)" $R/plan.log | grep -v "^PASS .*exit 0" ; grep -c "^PASS" $R/plan.log
P2P=alltoall,alltoallv,gather,scatter,sendrecv
timeout -k 5 60 $B/tests/gpu_matrix --mode all -n 2 --share-gpus --colls $P2P --quick > $R/p2p-same.log 2>&1; echo "p2p same exit $?"; tail -1 $R/p2p-same.log
. tests/gpu/mps.sh; mps_start
timeout -k 5 90 $B/bin/monelrun -n 4 --fake-hosts 4 $B/tests/gpu_matrix --mode procs --share-gpus --colls $P2P --quick > $R/p2p-net.log 2>&1; echo "p2p net exit $?"; grep PASS $R/p2p-net.log | head -2
mps_stop
ROUNDS=5 AB_NRANKS=2 AB_TIMEOUT=60 timeout -k 5 150 tools/bench/ab $B/bin /tmp/buf/lib $B/lib buf new > $R/ab.log 2>&1; echo "ab exit $? at $SECONDS s"; tail -5 $R/ab.log
HOSTS_BIN=broadcast_perf HOSTS_N=4 ROUNDS=5 HOSTS_ARGS="-b 8 -e 128M -f 8 -n 20 -w 5" HOSTS_MONEL=default \
  HOSTS_ROWS=$R/bc4.rows HOSTS_TIMEOUT=60 timeout -k 5 200 tools/bench/hosts $B $NL > $R/bc4.log 2>&1
echo "bc4 exit $? at $SECONDS s"; sed -n '/== medians/,$p' $R/bc4.log
cd $OUT && tar czf r.tgz r && rm -rf r
