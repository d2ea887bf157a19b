#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""AlltoAll and batched Send/Recv through torch.distributed, checked and timed.

One process per rank (torchrun), backend "nccl": whichever libnccl.so.2 the process loads (Monel
preloaded, or PyTorch's own NVIDIA NCCL). Each rank runs all_to_all_single on BYTES bytes of int32
per rank (an equal share to every rank) and batch_isend_irecv of BYTES to the next rank and from
the previous one; every element is compared with the value its sender put there, then ITERS calls
of each are timed one by one (the stream synchronized after each) and rank 0 prints the median.

    torchrun --nnodes N --nproc_per_node 1 ... tools/bench/torch-a2a.py [--bytes B] [--iters K]

Output (rank 0): "PASS exact all_to_all_single ... batch_isend_irecv on N ranks" or "FAIL ...",
then "median all_to_all_single B bytes: T ms" and "median batch_isend_irecv B bytes: T ms".
Exits non-zero when any rank saw a wrong element.
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=1 << 20)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    per = max(1, args.bytes // 4 // n)  # int32 elements to each peer
    # Element j of the block for peer p on rank r: a value no other (r, p, j) has.
    j = torch.arange(per, dtype=torch.int64, device="cuda")
    x = torch.cat([((rank * n + p) * per + j) % (1 << 31) for p in range(n)]).to(torch.int32)
    want = torch.cat([((s * n + rank) * per + j) % (1 << 31) for s in range(n)]).to(torch.int32)
    out = torch.empty_like(x)
    bad = 0

    def a2a():
        dist.all_to_all_single(out, x)

    nxt, prv = (rank + 1) % n, (rank - 1) % n
    sbuf = torch.full((per * n,), rank, dtype=torch.int32, device="cuda")
    rbuf = torch.empty_like(sbuf)

    def ring():
        ops = [dist.P2POp(dist.isend, sbuf, nxt), dist.P2POp(dist.irecv, rbuf, prv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()

    a2a()
    torch.cuda.synchronize()
    bad += int((out != want).sum().item())
    ring()
    torch.cuda.synchronize()
    bad += int((rbuf != prv).sum().item())
    times = {}
    for name, fn in (("all_to_all_single", a2a), ("batch_isend_irecv", ring)):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(args.iters):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t0) * 1e3)
        times[name] = statistics.median(ts)
    bad += int((out != want).sum().item()) + int((rbuf != prv).sum().item())
    tot = torch.tensor([bad], dtype=torch.int64, device="cuda")
    dist.all_reduce(tot)
    if rank == 0:
        verdict = "PASS" if tot.item() == 0 else "FAIL"
        print(f"{verdict} exact all_to_all_single and batch_isend_irecv on {n} ranks: "
              f"{tot.item()} wrong elements", flush=True)
        for name, t in times.items():
            print(f"median {name} {per * 4 * n} bytes: {t:.3f} ms", flush=True)
    dist.destroy_process_group()
    return 0 if tot.item() == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
