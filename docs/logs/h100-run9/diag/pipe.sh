#!/bin/bash
# one GPU, 2 ranks as 2 hosts under MPS: why Socket on the GPU engine is slower than a9adf1a at 2 MB and 128 MB
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bh /tmp/bp
tar xJf archives/bh.txz -C /tmp/bh && tar xJf archives/bp.txz -C /tmp/bp || exit 1
B=/tmp/bh NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
nvidia-smi -L; nproc
HOSTS_N=2 ROUNDS=5 HOSTS_ARGS="-b 2M -e 128M -f 8 -n 10 -w 3" HOSTS_TIMEOUT=30 HOSTS_ROWS=$OUT/ab-rows.txt \
  HOSTS_MONEL="head pre=@/tmp/bp/lib ring=NCCL_ALGO=allreduce:ring ch2=MONEL_NET_CHANNELS=2 prech2=@/tmp/bp/lib,MONEL_NET_CHANNELS=2" \
  timeout -k 5 280 tools/bench/hosts $B $NL > $OUT/ab.log 2>&1
echo "ab exit $?"; grep -E "^FAIL|runs that failed" $OUT/ab.log; sed -n '/== medians/,$p' $OUT/ab.log
source tests/gpu/mps.sh; mps_start
for lib in /tmp/bh/lib /tmp/bp/lib; do
  echo "== footprint $lib"
  LD_LIBRARY_PATH=$lib timeout -k 5 40 $B/bin/monelrun -n 2 --fake-hosts 2 sh -c 'export MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/rank_footprint --gpu --idle 1 --bytes 2097152 --iters 300 2>&1 | grep -v INFO | sed -E 's/.*CPU ms\/sleeps idle/idle/'
done > $OUT/cpu.log 2>&1; cat $OUT/cpu.log
export ST=$PWD/archives/st
for lib in /tmp/bh/lib /tmp/bp/lib; do
  tag=$(basename $(dirname $lib))
  SOUT=$OUT/strace-$tag.txt; export SOUT
  LD_LIBRARY_PATH=$lib timeout -k 5 60 $B/bin/monelrun -n 2 --fake-hosts 2 sh -c 'export MONEL_LOCAL_RANK=0; if [ "$MONEL_RANK" = 0 ]; then exec env LD_LIBRARY_PATH=$ST:$LD_LIBRARY_PATH $ST/strace -f -c -o $SOUT "$@"; else exec "$@"; fi' sh env LD_LIBRARY_PATH=$lib $B/bin/all_reduce_perf -b 2M -e 2M -n 200 -w 5 > $OUT/strace-run-$tag.log 2>&1 &
  wait
  echo "== strace $tag"; tail -3 $OUT/strace-run-$tag.log; head -25 $OUT/strace-$tag.txt
done
mps_stop
