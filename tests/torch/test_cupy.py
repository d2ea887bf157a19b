#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""CuPy's NCCL bindings (cupy.cuda.nccl) on Monel, over every local GPU:

1. one process: NcclCommunicator.initAll over all GPUs, an allReduce on each GPU in one
   groupStart/groupEnd, then a ring of send/recv between the GPUs in one group;
2. one process per GPU (NcclCommunicator(n, id, rank)): a ring of send/recv in a group,
   commSplit into even and odd GPUs with an allReduce in each part, and commSplit with color -1
   (no colour) for the odd GPUs, which must get None while the even ones get a communicator.

    LD_PRELOAD=$PWD/build/lib/libnccl.so.2 python3 tests/torch/test_cupy.py

Values are small integers, checked exactly on the host with NumPy. Prints one line per check
(PASS/FAIL/SKIP), then `cupy suite: N passed, M failed, K skipped on G GPUs`; exits non-zero
when a check failed. Without CuPy or without a GPU every check is reported as SKIP.
"""

import ctypes
import multiprocessing as mp
import sys
import time
import traceback

try:
    import numpy as np
    import cupy
    from cupy.cuda import nccl
    HAVE_CUPY = True
    WHY_NOT = ""
except Exception as e:  # reported as SKIP lines below
    HAVE_CUPY = False
    WHY_NOT = f"CuPy is not usable here ({type(e).__name__}: {e})"

COUNT = (1 << 18) + 3
RESULTS = []


def record(name, status, detail=""):
    RESULTS.append((name, status, detail))
    print(f"{status} {name}" + (f": {detail}" if detail else ""), flush=True)


def library_note():
    """Which libnccl the process uses: Monel exports ncclMonelGetVersionString."""
    try:
        fn = ctypes.CDLL(None).ncclMonelGetVersionString
    except AttributeError:
        return "not Monel (no ncclMonelGetVersionString in the process)"
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    s = ctypes.c_char_p()
    fn(ctypes.byref(s))
    return s.value.decode()


def values(seed, n):
    """Small integers as float32: (seed + 1) * (i % 7 + 1)."""
    return ((seed + 1) * (np.arange(n) % 7 + 1)).astype(np.float32)


def first_diff(got, want):
    bad = np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0]
    if bad.size == 0:
        return None
    i = int(bad[0])
    return f"element {i}: got {got[i]!r}, expected {want[i]!r} ({bad.size} of {got.size} wrong)"


# ---------------------------------------------------------------------------------------------
# One process, all GPUs

def single_process(ngpu):
    name = f"initAll+allReduce[{ngpu} GPUs, float32 sum]"
    try:
        comms = nccl.NcclCommunicator.initAll(ngpu)
    except Exception as e:
        record(name, "FAIL", f"initAll: {type(e).__name__}: {e}")
        return
    streams, send, recv = [], [], []
    try:
        for g in range(ngpu):
            with cupy.cuda.Device(g):
                streams.append(cupy.cuda.Stream(non_blocking=True))
                send.append(cupy.asarray(values(g, COUNT)))
                recv.append(cupy.full(COUNT, -1, dtype=cupy.float32))
                cupy.cuda.Device(g).synchronize()
        nccl.groupStart()
        for g in range(ngpu):
            with cupy.cuda.Device(g):
                comms[g].allReduce(send[g].data.ptr, recv[g].data.ptr, COUNT, nccl.NCCL_FLOAT32,
                                   nccl.NCCL_SUM, streams[g].ptr)
        nccl.groupEnd()
        want = (ngpu * (ngpu + 1) // 2 * (np.arange(COUNT) % 7 + 1)).astype(np.float32)
        errs = []
        for g in range(ngpu):
            with cupy.cuda.Device(g):
                streams[g].synchronize()
                d = first_diff(cupy.asnumpy(recv[g]), want)
                if d:
                    errs.append(f"GPU {g}: {d}")
            if comms[g].rank_id() != g or comms[g].size() != ngpu or comms[g].device_id() != g:
                errs.append(f"GPU {g}: rank {comms[g].rank_id()}/{comms[g].size()} on device "
                            f"{comms[g].device_id()}")
        record(name, "FAIL" if errs else "PASS", "; ".join(errs))
    except Exception as e:
        record(name, "FAIL", f"{type(e).__name__}: {e}")

    name = f"initAll+send/recv ring in one group[{ngpu} GPUs]"
    if ngpu < 2:
        record(name, "SKIP", "needs at least 2 GPUs")
    else:
        try:
            for g in range(ngpu):
                with cupy.cuda.Device(g):
                    send[g][...] = cupy.asarray(values(10 + g, COUNT))
                    recv[g].fill(-1)
                    cupy.cuda.Device(g).synchronize()
            nccl.groupStart()
            for g in range(ngpu):
                with cupy.cuda.Device(g):
                    comms[g].send(send[g].data.ptr, COUNT, nccl.NCCL_FLOAT32, (g + 1) % ngpu,
                                  streams[g].ptr)
                    comms[g].recv(recv[g].data.ptr, COUNT, nccl.NCCL_FLOAT32, (g - 1) % ngpu,
                                  streams[g].ptr)
            nccl.groupEnd()
            errs = []
            for g in range(ngpu):
                with cupy.cuda.Device(g):
                    streams[g].synchronize()
                    d = first_diff(cupy.asnumpy(recv[g]), values(10 + (g - 1) % ngpu, COUNT))
                    if d:
                        errs.append(f"GPU {g}: {d}")
            record(name, "FAIL" if errs else "PASS", "; ".join(errs))
        except Exception as e:
            record(name, "FAIL", f"{type(e).__name__}: {e}")
    for c in comms:
        c.destroy()


# ---------------------------------------------------------------------------------------------
# One process per GPU

def worker(rank, n, uid, out):
    """Runs in a spawned process; puts a list of (name, status, detail) on `out`."""
    res = []
    try:
        cupy.cuda.Device(rank).use()
        stream = cupy.cuda.Stream(non_blocking=True)
        comm = nccl.NcclCommunicator(n, uid, rank)

        # send/recv ring in a group
        name = f"processes: send/recv ring[{n} GPUs]"
        try:
            s = cupy.asarray(values(20 + rank, COUNT))
            r = cupy.full(COUNT, -1, dtype=cupy.float32)
            cupy.cuda.Device(rank).synchronize()
            nccl.groupStart()
            comm.send(s.data.ptr, COUNT, nccl.NCCL_FLOAT32, (rank + 1) % n, stream.ptr)
            comm.recv(r.data.ptr, COUNT, nccl.NCCL_FLOAT32, (rank - 1) % n, stream.ptr)
            nccl.groupEnd()
            stream.synchronize()
            d = first_diff(cupy.asnumpy(r), values(20 + (rank - 1) % n, COUNT))
            res.append((name, "FAIL" if d else "PASS", d or ""))
        except Exception as e:
            res.append((name, "FAIL", f"{type(e).__name__}: {e}"))

        # commSplit: evens and odds, an allReduce in each
        name = f"processes: commSplit(color=rank%2)+allReduce[{n} GPUs]"
        if not hasattr(comm, "commSplit"):
            res.append((name, "SKIP", "this CuPy's NcclCommunicator has no commSplit"))
        else:
            try:
                sub = comm.commSplit(rank % 2, rank)
                mine = [p for p in range(n) if p % 2 == rank % 2]
                errs = []
                if sub is None:
                    errs.append("commSplit returned None")
                else:
                    if sub.rank_id() != mine.index(rank) or sub.size() != len(mine):
                        errs.append(f"rank {sub.rank_id()}/{sub.size()}, expected "
                                    f"{mine.index(rank)}/{len(mine)}")
                    x = cupy.asarray(values(rank, COUNT))
                    cupy.cuda.Device(rank).synchronize()
                    sub.allReduce(x.data.ptr, x.data.ptr, COUNT, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                                  stream.ptr)
                    stream.synchronize()
                    want = sum(values(p, COUNT) for p in mine).astype(np.float32)
                    d = first_diff(cupy.asnumpy(x), want)
                    if d:
                        errs.append(d)
                    sub.destroy()
                res.append((name, "FAIL" if errs else "PASS", "; ".join(errs)))
            except Exception as e:
                res.append((name, "FAIL", f"{type(e).__name__}: {e}"))

            # commSplit with no colour for the odd ranks
            name = f"processes: commSplit(color=-1 on odd ranks)[{n} GPUs]"
            try:
                sub = comm.commSplit(0 if rank % 2 == 0 else -1, rank)
                evens = list(range(0, n, 2))
                errs = []
                if rank % 2:
                    if sub is not None:
                        errs.append("an odd rank got a communicator")
                        sub.destroy()
                elif sub is None:
                    errs.append("an even rank got None")
                else:
                    if sub.size() != len(evens) or sub.rank_id() != evens.index(rank):
                        errs.append(f"rank {sub.rank_id()}/{sub.size()}, expected "
                                    f"{evens.index(rank)}/{len(evens)}")
                    x = cupy.asarray(values(rank, COUNT))
                    cupy.cuda.Device(rank).synchronize()
                    sub.allReduce(x.data.ptr, x.data.ptr, COUNT, nccl.NCCL_FLOAT32, nccl.NCCL_MAX,
                                  stream.ptr)
                    stream.synchronize()
                    d = first_diff(cupy.asnumpy(x), values(evens[-1], COUNT))
                    if d:
                        errs.append(d)
                    sub.destroy()
                res.append((name, "FAIL" if errs else "PASS", "; ".join(errs)))
            except Exception as e:
                res.append((name, "FAIL", f"{type(e).__name__}: {e}"))
        comm.destroy()
    except Exception as e:
        res.append((f"processes: rank {rank}", "FAIL",
                    f"{type(e).__name__}: {e} | {traceback.format_exc(limit=3)!r}"))
    out.put((rank, res))


def multi_process(ngpu):
    names = [f"processes: send/recv ring[{ngpu} GPUs]",
             f"processes: commSplit(color=rank%2)+allReduce[{ngpu} GPUs]",
             f"processes: commSplit(color=-1 on odd ranks)[{ngpu} GPUs]"]
    if ngpu < 2:
        for n in names:
            record(n, "SKIP", "needs at least 2 GPUs")
        return
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    uid = nccl.get_unique_id()
    procs = [ctx.Process(target=worker, args=(r, ngpu, uid, out)) for r in range(ngpu)]
    for p in procs:
        p.start()
    per_rank = {}
    deadline = time.monotonic() + 120
    for _ in range(ngpu):
        try:
            rank, res = out.get(timeout=max(1.0, deadline - time.monotonic()))
            per_rank[rank] = res
        except Exception:
            break
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
    merged = {}
    order = []
    for r in range(ngpu):
        if r not in per_rank:
            record(f"processes: rank {r}", "FAIL",
                   "no result (exit code %s)" % procs[r].exitcode)
            continue
        for name, status, detail in per_rank[r]:
            if name not in merged:
                merged[name] = []
                order.append(name)
            merged[name].append((r, status, detail))
    for name in order:
        fails = [f"rank {r}: {d}" for r, s, d in merged[name] if s == "FAIL"]
        skips = [d for _, s, d in merged[name] if s == "SKIP"]
        if fails:
            record(name, "FAIL", "; ".join(fails[:4]))
        elif len(skips) == len(merged[name]):
            record(name, "SKIP", skips[0])
        else:
            record(name, "PASS")


def main():
    ngpu = 0
    if HAVE_CUPY:
        try:
            ngpu = cupy.cuda.runtime.getDeviceCount()
        except Exception as e:
            why = f"no GPU ({type(e).__name__}: {e})"
        else:
            why = "no GPU"
    else:
        why = WHY_NOT
    if ngpu < 1:
        for name in ("initAll+allReduce", "initAll+send/recv ring in one group",
                     "processes: send/recv ring", "processes: commSplit"):
            record(name, "SKIP", why)
    else:
        print(f"# CuPy {cupy.__version__}, NCCL API {nccl.get_version()}, library: "
              f"{library_note()}, {ngpu} GPUs", flush=True)
        single_process(ngpu)
        multi_process(ngpu)
    npass = sum(1 for _, s, _ in RESULTS if s == "PASS")
    nfail = sum(1 for _, s, _ in RESULTS if s == "FAIL")
    nskip = sum(1 for _, s, _ in RESULTS if s == "SKIP")
    print(f"cupy suite: {npass} passed, {nfail} failed, {nskip} skipped on {ngpu} GPUs")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
