# SPDX-License-Identifier: BSD-3-Clause
"""Overlap of a GEMM loop and collectives: how much each slows the other down.

One process per GPU (torchrun). On each GPU a bf16 GEMM loop (M=N=K=8192 by default) runs on one
stream and a collective loop (all_reduce of a float32 tensor, then all_gather and
reduce_scatter) on another. For each collective and size it measures:
  - the GEMM alone (TFLOP/s), the collective alone (time per call, bus bandwidth),
  - both at once, started together: the GEMM's TFLOP/s, the collective's time and bus bandwidth,
    and the wall time until both loops are done.
The collective loop has as many calls as fill about the GEMM loop's time, so that both overlap
for the whole measure. Bus bandwidth as nccl-tests defines it: all_reduce 2(n-1)/n x size,
all_gather and reduce_scatter (n-1)/n x size, where size is the larger buffer of the call.

    torchrun --nproc_per_node=2 tools/bench/overlap.py --sizes 64M,256M
    tools/bench/overlap -n 2            (NVIDIA's NCCL and Monel side by side: see README.md)

Rank 0 prints a table, and with --json FILE writes one JSON object per (collective, size).
"""

import argparse
import faulthandler
import json
import os
import sys

import torch
import torch.distributed as dist

COLLS = ("all_reduce", "all_gather", "reduce_scatter")


def parse_size(text):
    """'64M' -> 67108864; K, M, G are powers of 1024."""
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text[:-1] if mult > 1 else text) * mult)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="64M,256M", help="collective sizes in bytes (K, M, G)")
    p.add_argument("--colls", default=",".join(COLLS), help="comma list of " + ", ".join(COLLS))
    p.add_argument("--gemm", type=int, default=8192, help="M = N = K of the bf16 GEMM")
    p.add_argument("--gemm-iters", type=int, default=50, help="GEMMs per measured loop")
    p.add_argument("--warmup", type=int, default=5, help="untimed calls before each measure")
    p.add_argument("--json", default="", help="rank 0 writes the results here (JSON lines)")
    p.add_argument("--label", default="", help="a name for this run in the output")
    p.add_argument("--watchdog", type=int, default=600,
                   help="seconds after which every rank prints its stack and exits")
    return p.parse_args()


def timed(stream, fn, iters):
    """Milliseconds of `iters` calls of fn() enqueued on `stream`, measured by CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(stream):
        start.record(stream)
        for _ in range(iters):
            fn()
        end.record(stream)
    return start, end


class Coll:
    """One collective of `size` bytes on float32 tensors, and its bus bandwidth factor."""

    def __init__(self, name, size, n, dev):
        self.name, self.size, self.n = name, size, n
        elems = max(size // 4 // n * n, n)  # a multiple of n elements
        self.size = elems * 4
        if name == "all_reduce":
            self.buf = torch.ones(elems, dtype=torch.float32, device=dev)
            self.fn = lambda: dist.all_reduce(self.buf)
            self.factor = 2 * (n - 1) / n
        elif name == "all_gather":
            self.inp = torch.ones(elems // n, dtype=torch.float32, device=dev)
            self.out = torch.empty(elems, dtype=torch.float32, device=dev)
            self.fn = lambda: dist.all_gather_into_tensor(self.out, self.inp)
            self.factor = (n - 1) / n
        else:
            self.inp = torch.ones(elems, dtype=torch.float32, device=dev)
            self.out = torch.empty(elems // n, dtype=torch.float32, device=dev)
            self.fn = lambda: dist.reduce_scatter_tensor(self.out, self.inp)
            self.factor = (n - 1) / n

    def busbw(self, ms_per_call):
        return self.factor * self.size / (ms_per_call * 1e-3) / 1e9


def sync_all():
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()


def measure(args, coll, gemm_fn, gemm_flops, s_gemm, s_coll):
    """The figures of one (collective, size): alone, then together."""
    for _ in range(args.warmup):
        coll.fn()
        gemm_fn()
    sync_all()
    # GEMM alone.
    g0, g1 = timed(s_gemm, gemm_fn, args.gemm_iters)
    torch.cuda.synchronize()
    gemm_ms = g0.elapsed_time(g1)
    # The collective alone: as many calls as fill the GEMM loop's time. Every rank must make the
    # same number of calls, so the count comes from the slowest rank's GEMM loop and collective
    # (each rank's own GEMM time would give each its own count, and the ranks would wait forever
    # for calls their peers never make).
    c0, c1 = timed(s_coll, coll.fn, 10)
    torch.cuda.synchronize()
    probe = torch.tensor([c0.elapsed_time(c1) / 10, gemm_ms], device="cuda")
    dist.all_reduce(probe, op=dist.ReduceOp.MAX)
    coll_max_ms, gemm_max_ms = probe.tolist()
    iters = max(10, int(gemm_max_ms / max(coll_max_ms, 1e-3)))
    sync_all()
    c0, c1 = timed(s_coll, coll.fn, iters)
    torch.cuda.synchronize()
    coll_ms = c0.elapsed_time(c1) / iters
    sync_all()
    # Both at once, from one point on the device: both streams wait for an event.
    go = torch.cuda.Event(enable_timing=True)
    go.record(torch.cuda.current_stream())
    s_gemm.wait_event(go)
    s_coll.wait_event(go)
    g0, g1 = timed(s_gemm, gemm_fn, args.gemm_iters)
    c0, c1 = timed(s_coll, coll.fn, iters)
    torch.cuda.synchronize()
    both_gemm_ms = g0.elapsed_time(g1)
    both_coll_ms = c0.elapsed_time(c1) / iters
    wall_ms = max(go.elapsed_time(g1), go.elapsed_time(c1))
    alone_ms = gemm_ms + coll_ms * iters
    return {
        "coll": coll.name,
        "bytes": coll.size,
        "calls": iters,
        "gemm_tflops_alone": gemm_flops * args.gemm_iters / (gemm_ms * 1e-3) / 1e12,
        "gemm_tflops_both": gemm_flops * args.gemm_iters / (both_gemm_ms * 1e-3) / 1e12,
        "coll_us_alone": coll_ms * 1e3,
        "coll_us_both": both_coll_ms * 1e3,
        "busbw_alone": coll.busbw(coll_ms),
        "busbw_both": coll.busbw(both_coll_ms),
        "wall_ms_both": wall_ms,
        "wall_ms_serial": alone_ms,
    }


def worst(results):
    """Across ranks: the slowest figure of each (lowest rates, highest times)."""
    out = dict(results[0])
    for r in results[1:]:
        for k, v in r.items():
            if k.startswith(("gemm_tflops", "busbw")):
                out[k] = min(out[k], v)
            elif k.startswith(("coll_us", "wall_ms")):
                out[k] = max(out[k], v)
    return out


def main():
    args = parse_args()
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    rank, n = dist.get_rank(), dist.get_world_size()
    dev = torch.device("cuda", local)
    m = args.gemm
    a = torch.randn(m, m, dtype=torch.bfloat16, device=dev)
    b = torch.randn(m, m, dtype=torch.bfloat16, device=dev)
    c = torch.empty(m, m, dtype=torch.bfloat16, device=dev)
    gemm_fn = lambda: torch.matmul(a, b, out=c)  # noqa: E731
    gemm_flops = 2.0 * m * m * m
    s_gemm, s_coll = torch.cuda.Stream(device=dev), torch.cuda.Stream(device=dev)
    colls = [x for x in args.colls.split(",") if x]
    for x in colls:
        if x not in COLLS:
            sys.exit(f"overlap.py: unknown collective {x!r}: use {', '.join(COLLS)}")
    rows = []
    for name in colls:
        for size in [parse_size(s) for s in args.sizes.split(",") if s]:
            if rank == 0:
                print(f"overlap: {name} {size} bytes", file=sys.stderr, flush=True)
            coll = Coll(name, size, n, dev)
            res = measure(args, coll, gemm_fn, gemm_flops, s_gemm, s_coll)
            gathered = [None] * n
            dist.all_gather_object(gathered, res)
            row = worst(gathered)
            row["label"], row["ranks"] = args.label, n
            rows.append(row)
            del coll
    if rank == 0:
        head = (f"{'collective':<15}{'bytes':>11}{'GEMM TF/s':>11}{'+coll':>9}{'coll us':>10}"
                f"{'+GEMM':>10}{'busbw':>8}{'+GEMM':>8}{'wall ms':>9}{'serial':>8}")
        print(f"# overlap {args.label}: {n} ranks, bf16 GEMM {m}^3 x {args.gemm_iters} per loop; "
              "busbw GB/s; '+x' columns: with the other loop running; worst rank")
        print(head)
        for r in rows:
            print(f"{r['coll']:<15}{r['bytes']:>11}{r['gemm_tflops_alone']:>11.1f}"
                  f"{r['gemm_tflops_both']:>9.1f}{r['coll_us_alone']:>10.1f}{r['coll_us_both']:>10.1f}"
                  f"{r['busbw_alone']:>8.1f}{r['busbw_both']:>8.1f}{r['wall_ms_both']:>9.1f}"
                  f"{r['wall_ms_serial']:>8.1f}")
        if args.json:
            with open(args.json, "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
