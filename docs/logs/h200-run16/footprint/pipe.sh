#!/bin/bash
# one GPU, ranks as hosts under MPS, 8 hosts: rank_footprint (one AllReduce at a time, a wait
# after each; CPU per thread) for 16 MB x 100 and 128 MB x 20, two rounds in mirrored order:
# NVIDIA's NCCL, Monel HEAD, the variant with every message on the control socket.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn /tmp/var $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
tar xJf archives/var.txz -C /tmp/var || exit 1
B=/tmp/bn R=$OUT/r NL=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib V=/tmp/var/inlx/lib
. tests/gpu/mps.sh; mps_start
fp() { # NAME LIBDIR BYTES ITERS [VAR=value]
  echo "== $1 $3 x $4" >> $R/fp.log
  env ${5:-X_NONE=1} NCCL_SET_THREAD_NAME=1 LD_LIBRARY_PATH=$2 timeout -k 5 60 $B/bin/monelrun -n 8 --fake-hosts 8 sh -c \
    'export NCCL_HOSTID=$MONEL_HOST_ID MONEL_LOCAL_RANK=0; exec "$@"' sh \
    $B/bin/rank_footprint --gpu --idle 0.1 --bytes $3 --iters $4 >> $R/fp.log 2>&1
  echo "$1 $3 exit $? at $SECONDS s: $(grep -o 'x AllReduce [0-9]* B in [0-9.]* s' $R/fp.log | tail -8 | awk '{print $6}' | sort -n | tr '\n' ' ')"
}
I=MONEL_X_INLINE_MAX=1073741824
for S in "16777216 100" "134217728 20"; do
  fp nccl $NL $S; fp default $B/lib $S; fp inl8 $V $S $I
  fp inl8 $V $S $I; fp default $B/lib $S; fp nccl $NL $S
done
mps_stop
cd $OUT && tar czf r.tgz r && rm -rf r
