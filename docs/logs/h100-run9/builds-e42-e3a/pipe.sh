#!/bin/bash
# one GPU: build e42cde6 and e3a9c63 here, then AllReduce 2 MB / 16 MB across 2 fake hosts: pre, e42, e3a, head (random order)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$PWD
mkdir -p /tmp/bh /tmp/bp
tar xJf archives/bh.txz -C /tmp/bh && tar xJf archives/bp.txz -C /tmp/bp || exit 1
for v in e42 e3a; do
  rm -rf /tmp/$v; mkdir -p /tmp/$v; tar xzf archives/$v.tgz -C /tmp/$v
  ( cmake -S /tmp/$v -B /tmp/$v/build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real > $OUT/build-$v.log 2>&1 &&
    cmake --build /tmp/$v/build -j8 --target monel >> $OUT/build-$v.log 2>&1; echo "$v rc=$?" >> $OUT/build-$v.log ) &
done
wait; echo "built at $SECONDS s"; tail -1 $OUT/build-e42.log $OUT/build-e3a.log
ls /tmp/e42/build/lib /tmp/e3a/build/lib
B=/tmp/bh
. tools/bench/perf_rows.sh
source tests/gpu/mps.sh; mps_start
run() { local name=$1 lib=$2
  out=$(LD_LIBRARY_PATH=$lib timeout -k 5 40 $B/bin/monelrun -n 2 --fake-hosts 2 sh -c 'export MONEL_LOCAL_RANK=0; exec "$@"' sh $B/bin/all_reduce_perf -b 2M -e 16M -f 8 -n 10 -w 3 2>&1)
  printf '%s\n' "$out" | sed -n 's/^\[0\] //p' | perf_rows 2 $name >> $OUT/rows.txt
  printf '%s\n' "$out" | sed -n 's/^\[0\] //p' | perf_wrong | grep -v "^0$"
}
CONFIGS=("head /tmp/bh/lib" "pre /tmp/bp/lib" "e42 /tmp/e42/build/lib" "e3a /tmp/e3a/build/lib")
for r in 0 1 2 3 4 5; do
  for i in $(seq 0 3 | shuf); do run ${CONFIGS[$i]}; done
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
echo "done at $SECONDS s"
