#!/bin/bash
# one GPU, ranks as hosts under MPS, this build: the point-to-point collectives checked exactly on
# the same host (2 ranks) and across 4 hosts; then the tables against NVIDIA's NCCL:
# AllGather and ReduceScatter at 4 hosts (3 rounds), AllReduce at 2, 4 and 8 hosts (5 rounds)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
export LD_LIBRARY_PATH=$B/lib
P2P=alltoall,alltoallv,gather,scatter,sendrecv
timeout -k 5 60 $B/tests/gpu_matrix --mode all -n 2 --share-gpus --colls $P2P --quick > $R/p2p-same.log 2>&1; echo "p2p same exit $?"; tail -1 $R/p2p-same.log
. tests/gpu/mps.sh; mps_start
timeout -k 5 90 $B/bin/monelrun -n 4 --fake-hosts 4 $B/tests/gpu_matrix --mode procs --share-gpus --colls $P2P --quick > $R/p2p-net.log 2>&1; echo "p2p net exit $?"; grep -E "PASS|FAIL" $R/p2p-net.log | head -3
mps_stop
unset LD_LIBRARY_PATH
bench() { # NAME N ROUNDS BIN ARGS
  HOSTS_BIN=$4 HOSTS_N=$2 ROUNDS=$3 HOSTS_ARGS="$5" HOSTS_MONEL=default \
    HOSTS_ROWS=$R/$1.rows HOSTS_TIMEOUT=90 timeout -k 5 ${6:-200} tools/bench/hosts $B $NL > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "FAIL|failed" $R/$1.log | tail -1
}
bench ag4 4 3 all_gather_perf "-b 8 -e 128M -f 8 -n 20 -w 5" 100
bench rs4 4 3 reduce_scatter_perf "-b 8 -e 128M -f 8 -n 20 -w 5" 100
bench ar2 2 5 all_reduce_perf "-b 8 -e 128M -f 8 -n 20 -w 5" 100
bench ar4 4 5 all_reduce_perf "-b 8 -e 128M -f 8 -n 20 -w 5" 130
bench ar8 8 5 all_reduce_perf "-b 8 -e 128M -f 8 -n 20 -w 5" 200
cd $OUT && tar czf r.tgz r && rm -rf r
