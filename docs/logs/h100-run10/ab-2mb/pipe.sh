#!/bin/bash
# one GPU, 2 ranks as hosts under MPS: AllReduce 1-4 MB over Socket, this tree against a9adf1a (and NCCL), many rounds; then per-thread CPU of each while it runs 2 MB
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/bp
tar xJf archives/bn.txz -C /tmp/bn && tar xJf archives/bp.txz -C /tmp/bp || exit 1
B=/tmp/bn NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
{ nvidia-smi -L; nproc; lscpu | grep -E "Model name|NUMA node\(s\)|^CPU\(s\)"; } | tee $OUT/machine.txt
HOSTS_N=2 ROUNDS=${R:-14} HOSTS_ARGS="-b 1M -e 4M -f 2 -n 20 -w 5" HOSTS_TIMEOUT=30 HOSTS_ROWS=$OUT/ar2-rows.txt \
  HOSTS_MONEL="head pre=@/tmp/bp/lib" timeout -k 5 240 tools/bench/hosts $B $NL > $OUT/ar2.log 2>&1
echo "ar2 exit $? at $SECONDS s"; grep -E "^FAIL|runs that failed" $OUT/ar2.log; sed -n '/== medians/,$p' $OUT/ar2.log
. tests/gpu/mps.sh; mps_start
for r in 1 2 3; do for lib in /tmp/bn/lib /tmp/bp/lib; do
  echo "== thr round $r $lib"
  LD_LIBRARY_PATH=$lib timeout -k 5 40 $B/bin/monelrun -n 2 --fake-hosts 2 sh -c 'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/all_reduce_perf -b 2M -e 2M -n 12000 -w 5 > /tmp/thr.out 2>&1 &
  p=$!; sleep 4; python3 archives/thr.py 2; wait $p; grep -E "^\[0\] +2097152" /tmp/thr.out
done; done > $OUT/thr.log 2>&1
mps_stop
echo "thr at $SECONDS s"; cat $OUT/thr.log | grep -v "^pid.*cpu *0.0" | head -120
