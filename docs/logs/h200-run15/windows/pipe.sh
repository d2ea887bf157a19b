#!/bin/bash
# one GPU, 2 ranks as 2 hosts under MPS, the final build and NVIDIA's NCCL alternately: AllReduce
# of 8 B, 100000 operations a run, 8 runs each; during each run, four snapshots of the CPU every
# thread of the ranks last ran on (ps psr), and the machine's CPU topology (lscpu -e): does a
# run's speed follow where its threads land?
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
lscpu > $R/lscpu.txt; lscpu -e > $R/lscpu-e.txt
. tests/gpu/mps.sh; mps_start
for r in 1 2 3 4 5 6 7 8; do
  for L in monel nccl; do
    lib=$B/lib; [ $L = nccl ] && lib=$NL
    ( LD_LIBRARY_PATH=$lib timeout -k 5 60 $B/bin/monelrun -n 2 --fake-hosts 2 sh -c \
      'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
      $B/bin/all_reduce_perf -b 8 -e 8 -n 100000 -w 500 > $R/run-$L-$r.log 2>&1 ) &
    p=$!
    sleep 2; for s in 1 2 3 4; do
      sleep 0.4
      echo "== snapshot $s" >> $R/ps-$L-$r.txt
      ps -eLo pid,tid,psr,pcpu,comm --no-headers | awk '$5 ~ /all_reduce|monel|cuda/' >> $R/ps-$L-$r.txt
    done
    wait $p
    echo "$L $r: $(sed -n 's/^\[0\] *\([0-9]\+\) .*/&/p' $R/run-$L-$r.log | head -1)"
  done
done
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
