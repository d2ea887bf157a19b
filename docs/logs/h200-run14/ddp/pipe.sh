#!/bin/bash
# one GPU, the commit's build: PyTorch DDP (examples/torch/ddp_linear.py) as 2 and 4 hosts,
# ranks sharing the GPU under MPS, NVIDIA's NCCL first, then Monel (tests/torch/run-hosts)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p /tmp/bn $OUT/r
tar xJf archives/bn.txz -C /tmp/bn || exit 1
OUT=$OUT/r HOSTS_RUN_TIMEOUT=80 timeout -k 5 175 tests/torch/run-hosts /tmp/bn 2>&1 | tee $OUT/r/run-hosts.log | grep -E "PASS|FAIL|SKIP"
