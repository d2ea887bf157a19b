#!/bin/bash
# one GPU: back-to-back kernel launches with and without programmatic dependent launch, alone
# and under MPS (gpu_costs)
set -u
mkdir -p $OUT/r
archives/gpu_costs 2>&1 | grep -E "launches|small" | tee $OUT/r/nomps.txt
. tests/gpu/mps.sh; mps_start
archives/gpu_costs 2>&1 | grep -E "launches|small" | tee $OUT/r/mps.txt
mps_stop
