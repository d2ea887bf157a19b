#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The smallest DistributedDataParallel program: y = w * 7 * x, with w a parameter (5.0) and
x this rank's number. Each rank prints y, its own gradient dy/dw = 7x (from autograd on a
plain, unwrapped copy of the model), the gradient DDP averaged over all ranks
(7 * (W-1)/2 on W ranks) and w after one SGD step. Every float is printed twice: as Python's
repr and as the hex of its float32 bits, so that two runs can be compared with diff.

    LD_PRELOAD=$PWD/build/lib/libnccl.so.2 torchrun --nproc_per_node=4 examples/torch/ddp_toy.py

Without GPUs (or with --backend gloo / MONEL_TORCH_BACKEND=gloo) it runs on CPU tensors with
the gloo backend. Lines are printed by each rank in any order; sort them to compare runs.
Exits non-zero when a value differs from the one computed here by hand.
"""

import argparse
import copy
import os
import struct
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor([5.0]))

    def forward(self, x):
        return self.w * 7 * x


def show(t):
    v = float(t.detach().reshape(-1)[0].float().item())
    return f"{v!r} (0x{struct.unpack('<I', struct.pack('<f', v))[0]:08x})"


def main():
    p = argparse.ArgumentParser(description="y = w*7*x under DistributedDataParallel")
    default = os.environ.get("MONEL_TORCH_BACKEND") or (
        "nccl" if torch.cuda.is_available() else "gloo")
    p.add_argument("--backend", choices=["nccl", "gloo"], default=default)
    args = p.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if args.backend == "nccl":
        dev = torch.device("cuda", local)
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl", device_id=dev)
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")

    model = Toy().to(dev)
    plain = copy.deepcopy(model)  # never wrapped: its gradient is this rank's own
    ddp = DDP(model, device_ids=[local] if dev.type == "cuda" else None)
    x = torch.tensor([float(rank)], device=dev)

    # Local gradient, before any communication.
    y_local = plain(x)
    (g_local,) = torch.autograd.grad(y_local.sum(), plain.w)

    # Through DDP: backward all-reduces and averages the gradient over the ranks.
    y = ddp(x)
    y.sum().backward()
    g_avg = ddp.module.w.grad.detach().clone()
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    opt.step()
    w_after = ddp.module.w.detach().clone()

    want_y = 5.0 * 7 * rank
    want_local = 7.0 * rank
    want_avg = 7.0 * (world - 1) / 2
    # w after the step is printed, not checked: whether w - lr*g is rounded once (fused) or
    # twice depends on the device; it must match between two runs on the same device.
    ok = float(y) == want_y and float(g_local) == want_local and float(g_avg) == want_avg
    line = (f"rank {rank}/{world}: x={show(x)} y={show(y)} local dy/dw={show(g_local)} "
            f"averaged dy/dw={show(g_avg)} w after SGD(lr=0.1)={show(w_after)} "
            + ("ok" if ok else f"WRONG (expected y={want_y!r} local dy/dw={want_local!r} "
                               f"averaged dy/dw={want_avg!r})"))
    sys.stdout.write(line + "\n")  # one write: the ranks' lines share one output
    sys.stdout.flush()
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
