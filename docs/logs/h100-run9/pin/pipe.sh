#!/bin/bash
# one GPU, 2 ranks as 2 hosts under MPS: is the run-to-run spread of Socket on the GPU engine a matter of where threads run?
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bh /tmp/bp
tar xJf archives/bh.txz -C /tmp/bh && tar xJf archives/bp.txz -C /tmp/bp || exit 1
B=/tmp/bh
{ lscpu | grep -E "^CPU\(s\)|NUMA|Thread|Core|Socket|Model name"; nvidia-smi topo -m; cat /sys/bus/pci/devices/*/numa_node 2>/dev/null | sort | uniq -c; } > $OUT/machine.txt 2>&1
cat $OUT/machine.txt
. tools/bench/perf_rows.sh
source tests/gpu/mps.sh; mps_start
# config: name lib pin env...
run() { local name=$1 lib=$2 pin=$3; shift 3
  out=$(env "$@" PIN=$pin LD_LIBRARY_PATH=$lib timeout -k 5 40 $B/bin/monelrun -n 2 --fake-hosts 2 sh -c '
    export MONEL_LOCAL_RANK=0
    case $PIN in
      split) exec taskset -c $((MONEL_RANK*8))-$((MONEL_RANK*8+7)) "$@";;
      half) exec taskset -c 0-7 "$@";;
      *) exec "$@";;
    esac' sh $B/bin/all_reduce_perf -b 2M -e 128M -f 64 -n 10 -w 3 2>&1)
  printf '%s\n' "$out" | sed -n 's/^\[0\] //p' | perf_rows 2 $name >> $OUT/rows.txt
  printf '%s\n' "$out" | grep -E "wrong|rror" | head -3
}
CONFIGS=("head /tmp/bh/lib none" "pre /tmp/bp/lib none" "head-split /tmp/bh/lib split" "pre-split /tmp/bp/lib split" "head-half /tmp/bh/lib half" "head-t1s4 /tmp/bh/lib none NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=4")
for r in 0 1 2 3 4 5; do
  for i in $(seq 0 $((${#CONFIGS[@]}-1)) | shuf); do run ${CONFIGS[$i]}; done
done
mps_stop
python3 - $OUT/rows.txt <<'PY'
import sys, collections, statistics
rows = collections.defaultdict(list)
for l in open(sys.argv[1]):
    n, name, size, t, bw = l.split(); rows[(int(size), name)].append(float(t))
for (size, name), v in sorted(rows.items()):
    print(f"{size:>10} {name:<10} median {statistics.median(v):9.1f} us  min {min(v):9.1f} max {max(v):9.1f}  all {' '.join('%.0f'%x for x in v)}")
PY
