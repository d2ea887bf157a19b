#!/bin/bash
# one GPU, ranks as hosts under MPS, 8 hosts: a system-wide CPU profile (perf record -a, cpu-clock,
# no call graphs) of AllReduce 16 MB back to back (all_reduce_perf -n 300), for NVIDIA's NCCL,
# Monel HEAD and the variant with every message on the control socket; the report per thread
# name, library and function.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 NCCL_SET_THREAD_NAME=1
mkdir -p /tmp/bn /tmp/var /tmp/pf $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/var.txz -C /tmp/var || exit 1
tar xJf archives/perf.txz -C /tmp/pf || exit 1
PERF="/tmp/pf/perf/lib/ld-linux-x86-64.so.2 --library-path /tmp/pf/perf/lib /tmp/pf/perf/perf"
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib V=/tmp/var/inlx/lib
. tests/gpu/mps.sh; mps_start
prof() { # NAME LIBDIR [VAR=value]
  env ${3:-X_NONE=1} LD_LIBRARY_PATH=$2 timeout -k 5 90 $PERF record -a -F 499 -o /tmp/$1.data -- \
    $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/all_reduce_perf -b 16M -e 16M -n 300 -w 5 > $R/$1.log 2>&1
  echo "$1 exit $? at $SECONDS s"; grep -E "^\[0\] +16777216" $R/$1.log
  $PERF report -i /tmp/$1.data --stdio --sort comm > $R/$1-comm.txt 2>/dev/null
  $PERF report -i /tmp/$1.data --stdio --sort comm,dso,sym --percent-limit 0.2 > $R/$1-sym.txt 2>/dev/null
  grep -v "^#" $R/$1-comm.txt | grep -v "^$" | head -12
}
prof nccl $NL
prof default $B/lib
prof inl8 $V MONEL_X_INLINE_MAX=1073741824
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
