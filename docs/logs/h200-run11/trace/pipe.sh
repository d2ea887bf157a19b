#!/bin/bash
# one GPU, ranks as hosts under MPS: where a one-hop trip's time goes (a build whose proxy stamps each step: send posted, send done, receive in, kernel waiting)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn && tar xJf archives/tr.txz -C /tmp || exit 1
B=/tmp/bn R=$OUT/r
. tests/gpu/mps.sh; mps_start
one() { # NAME N BIN ARGS
  mkdir -p $R/$1
  MONEL_TRACE_DIR=$R/$1 LD_LIBRARY_PATH=/tmp/trlib timeout -k 5 60 $B/bin/monelrun -n $2 --fake-hosts $2 $B/bin/$3 $4 > $R/$1/out.txt 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^\[0\] +[0-9]+ " $R/$1/out.txt | head -3
}
one ar2 2 all_reduce_perf "-b 8 -e 8 -n 300 -w 20"
one ar4 4 all_reduce_perf "-b 8 -e 8 -n 300 -w 20"
one ag4 4 all_gather_perf "-b 64 -e 64 -n 300 -w 20"
one bc4 4 broadcast_perf "-b 8 -e 8 -n 300 -w 20"
one ar8 8 all_reduce_perf "-b 8 -e 8 -n 300 -w 20"
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
