#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A small DistributedDataParallel training run: three Linear(4000, 4000) layers with ReLU
between them, gradients all-reduced in 25 MB buckets, MSE loss, SGD (lr 0.001), 10 steps on
one random batch of 1000 per rank. The model starts from one fixed seed (identical on every
rank); rank r's batch comes from seed 1234 + r. Rank 0 prints each step's loss with 6
significant digits and the exact float32 bits:

    step 1 loss 1.33468 (0x3faad7c1)

    LD_PRELOAD=$PWD/build/lib/libnccl.so.2 torchrun --nproc_per_node=8 examples/torch/ddp_linear.py

Without GPUs (or with --backend gloo / MONEL_TORCH_BACKEND=gloo) it runs on CPU tensors with
the gloo backend; --width, --batch and --steps make it smaller there. At the end every rank
checks that its parameters are bit-identical to rank 0's (DDP keeps replicas equal) and the
program exits non-zero if not, or if a loss is not finite.
"""

import argparse
import math
import os
import struct
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def say(line):
    sys.stdout.write(line + "\n")  # one write per line: ranks share the output
    sys.stdout.flush()


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def main():
    p = argparse.ArgumentParser(description="3 x Linear(4000, 4000) under DDP, 10 SGD steps")
    default = os.environ.get("MONEL_TORCH_BACKEND") or (
        "nccl" if torch.cuda.is_available() else "gloo")
    p.add_argument("--backend", choices=["nccl", "gloo"], default=default)
    p.add_argument("--width", type=int, default=4000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--steps", type=int, default=10)
    args = p.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.backend == "nccl":
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
        # Full float32 matmuls, so that runs on different libraries can be compared.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")

    w = args.width
    torch.manual_seed(0)  # the same initial model on every rank
    model = nn.Sequential(nn.Linear(w, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(),
                          nn.Linear(w, w)).to(dev)
    ddp = DDP(model, device_ids=[local] if dev.type == "cuda" else None, bucket_cap_mb=25)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.001)
    loss_fn = nn.MSELoss()
    data = torch.Generator().manual_seed(1234 + rank)  # on the CPU: the same on any device
    x = torch.randn(args.batch, w, generator=data).to(dev)
    target = torch.randn(args.batch, w, generator=data).to(dev)

    ok = True
    for step in range(1, args.steps + 1):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), target)
        loss.backward()
        opt.step()
        v = float(loss.item())
        if not math.isfinite(v):
            ok = False
        if rank == 0:
            say(f"step {step} loss {v:.6g} (0x{f32_bits(v):08x})")

    # DDP keeps the replicas identical: compare every parameter with rank 0's, bit for bit.
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    same = torch.equal(flat.view(torch.int32), ref.view(torch.int32))
    flags = torch.tensor([0 if (same and ok) else 1], device=dev)
    dist.all_reduce(flags)
    if rank == 0:
        say(f"replicas identical on {world} ranks: {'yes' if int(flags) == 0 else 'NO'}")
    dist.destroy_process_group()
    return 0 if int(flags) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
