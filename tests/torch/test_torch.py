#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""torch.distributed on Monel: every collective, dtype and feature PyTorch drives through NCCL.

Run one process per GPU (backend "nccl", rank i on cuda:LOCAL_RANK), Monel preloaded:

    LD_PRELOAD=build/lib/libnccl.so.2 torchrun --nproc_per_node=4 tests/torch/test_torch.py

or on CPU tensors with the gloo backend, to check the suite itself where there is no GPU:

    torchrun --nproc_per_node=4 tests/torch/test_torch.py --backend gloo
    MONEL_TORCH_BACKEND=gloo torchrun --nproc_per_node=4 tests/torch/test_torch.py

Every expected value is computed on the CPU from the rank numbers alone: rank r's input is a
function of r, so every rank knows every other rank's input. Inputs are small integers (and
products of +-1/+-2) so that each result is exact in every data type; results are compared bit
for bit. Floating AVG is exact when the group size is a power of two; otherwise it is compared
to within 2 ulp.

Output: rank 0 prints one line per check, `PASS name`, `FAIL name: detail` or `SKIP name: why`,
merged over all ranks (a check fails when it fails on any rank), then
`torch suite: N passed, M failed, K skipped on W ranks`. The exit status is non-zero when
anything failed. Ranks hand their results to rank 0 through the c10d store that torchrun
provides, not through the library under test, so a failure on any rank is reported even when
the communicator itself is broken. Lines starting with `#` are progress notes.

Options: --backend nccl|gloo, --only SUBSTRING (run the checks whose name contains it),
--timeout SECONDS (collective timeout, default 120; env MONEL_TORCH_TIMEOUT).
"""

import argparse
import ctypes
import datetime
import json
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

from values import (PREMUL_FACTOR, PREMUL_FACTOR_BF16_HOST, Mismatch, cast, compare, is_pow2,
                    pattern, red_expected, red_input)

# ---------------------------------------------------------------------------------------------
# Set-up

ARGS = None
BACKEND = "nccl"
RANK = 0
WORLD = 1
LOCAL_RANK = 0
DEV = torch.device("cpu")
STORE = None  # the store torchrun gave us; results travel through it
TIMEOUT = 120.0

DTYPES = [
    ("float32", torch.float32),
    ("float16", torch.float16),
    ("bfloat16", torch.bfloat16),
    ("int32", torch.int32),
    ("int64", torch.int64),
    ("int8", torch.int8),
    ("uint8", torch.uint8),
    ("float8_e4m3fn", torch.float8_e4m3fn),
    ("float8_e5m2", torch.float8_e5m2),
]
DT = dict(DTYPES)
FP8 = {"float8_e4m3fn", "float8_e5m2"}
FLOATS = {"float32", "float16", "bfloat16"}
# Reductions: PyTorch refuses float8 types in NCCL reductions, so they are left out.
REDUCIBLE = [name for name, _ in DTYPES if name not in FP8]

# Things the gloo backend (CPU tensors) cannot do; only consulted with --backend gloo.
GLOO_NO_PREMUL = "gloo has no PREMUL_SUM (nccl only)"
GLOO_NO_FP8 = "gloo's collectives reject float8 types (Invalid scalar type)"
GLOO_NO_GRAPH = "CUDA graphs need CUDA tensors"
GLOO_NO_SPLIT = "split_group needs a process group bound to a GPU (nccl)"
GLOO_NO_A2A_LIST = "gloo has no all_to_all on tensor lists (only all_to_all_single)"
GLOO_NO_STACKED = "gloo's all_gather_into_tensor takes only the flat output shape"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", choices=["nccl", "gloo"],
                   default=os.environ.get("MONEL_TORCH_BACKEND", "nccl"))
    p.add_argument("--only", default="", help="run only the checks whose name contains this")
    p.add_argument("--timeout", type=float,
                   default=float(os.environ.get("MONEL_TORCH_TIMEOUT", "120")))
    return p.parse_args()


def init_pg(store=None):
    kw = {"backend": BACKEND, "timeout": datetime.timedelta(seconds=TIMEOUT)}
    if BACKEND == "nccl":
        # A bound device makes PyTorch create the communicator at once and build new groups
        # with ncclCommSplit.
        kw["device_id"] = DEV
    if store is not None:
        kw.update(store=store, rank=RANK, world_size=WORLD)
    dist.init_process_group(**kw)


def library_note():
    """Which libnccl this process uses: Monel exports ncclMonelGetVersionString (visible here when
    it was preloaded)."""
    try:
        fn = ctypes.CDLL(None).ncclMonelGetVersionString
    except AttributeError:
        return "not Monel (no ncclMonelGetVersionString in the process)"
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    s = ctypes.c_char_p()
    fn(ctypes.byref(s))
    return s.value.decode()


def default_store():
    return dist.distributed_c10d._get_default_store()


# ---------------------------------------------------------------------------------------------
# Values: CPU tensors computed from rank numbers only, and their exact comparison (values.py)

def reduce_op(op, dt=None):
    if op == "premul_sum":
        if dt == "bfloat16":
            return dist._make_nccl_premul_sum(PREMUL_FACTOR_BF16_HOST)
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return {
        "sum": dist.ReduceOp.SUM,
        "product": dist.ReduceOp.PRODUCT,
        "min": dist.ReduceOp.MIN,
        "max": dist.ReduceOp.MAX,
        "avg": dist.ReduceOp.AVG,
    }[op]


def dev(t):
    """A copy on the device under test (always a copy: on the CPU too, so that a result never
    aliases the tensor it is compared with)."""
    return t.to(DEV, copy=True)


# ---------------------------------------------------------------------------------------------
# Checks: each is (name, function, reason to skip under gloo or None). A function returns None
# when it passed, a string when it skips, and raises when it fails.

CHECKS = []


def check(name, gloo_skip=None):
    def deco(fn):
        CHECKS.append((name, fn, gloo_skip))
        return fn
    return deco


def add(name, fn, gloo_skip=None):
    CHECKS.append((name, fn, gloo_skip))


def peers():
    return (RANK + 1) % WORLD, (RANK - 1) % WORLD


def need_two():
    return "needs at least 2 ranks" if WORLD < 2 else None


def gloo_reduction_skip(op, dtname):
    return GLOO_NO_PREMUL if op == "premul_sum" else None


# -- all_reduce

def all_reduce_case(op, dtname, n=1031):
    def run():
        dt = DT[dtname]
        x = dev(cast(red_input(op, RANK, n, dt), dt))
        dist.all_reduce(x, op=reduce_op(op, dtname))
        compare(x, red_expected(op, range(WORLD), n, dt),
                tolerant=(op == "avg" and not is_pow2(WORLD)))
    return run


def premul_tensor_case():
    dt = torch.float32
    n = 1031
    factor = dev(torch.tensor([PREMUL_FACTOR], dtype=dt))
    x = dev(cast(red_input("premul_sum", RANK, n, dt), dt))
    dist.all_reduce(x, op=dist._make_nccl_premul_sum(factor))
    compare(x, red_expected("premul_sum", range(WORLD), n, dt))


for _op in ("sum", "product", "min", "max", "avg", "premul_sum"):
    for _dt in REDUCIBLE:
        if _op in ("avg", "premul_sum") and _dt not in FLOATS:
            continue
        add(f"all_reduce[{_op},{_dt}]", all_reduce_case(_op, _dt), gloo_reduction_skip(_op, _dt))
add("all_reduce[premul_sum,float32,tensor factor]", premul_tensor_case, GLOO_NO_PREMUL)
add("all_reduce[sum,float32,n=4194309]", all_reduce_case("sum", "float32", (1 << 22) + 5))
add("all_reduce[sum,bfloat16,n=2097155]", all_reduce_case("sum", "bfloat16", (1 << 21) + 3))
add("all_reduce[avg,float16,n=1048579]", all_reduce_case("avg", "float16", (1 << 20) + 3))


# -- broadcast

def broadcast_case(dtname, root, n=1031):
    def run():
        dt = DT[dtname]
        src = root % WORLD  # -1: the last rank
        want = pattern(100 + src, n, dt)
        x = dev(want if RANK == src else pattern(900 + RANK, n, dt))
        dist.broadcast(x, src=src)
        compare(x, want)
    return run


for _dt, _ in DTYPES:
    add(f"broadcast[{_dt},root=last]", broadcast_case(_dt, -1),
        GLOO_NO_FP8 if _dt in FP8 else None)
# Root 0, and a large one through the pipelined path.
add("broadcast[float32,root=0]", broadcast_case("float32", 0))
add("broadcast[float32,root=last,n=2097157]", broadcast_case("float32", -1, (1 << 21) + 5))


# -- reduce

def reduce_case(op, dtname, n=1031):
    def run():
        dt = DT[dtname]
        root = 1 % WORLD
        x = dev(cast(red_input(op, RANK, n, dt), dt))
        dist.reduce(x, dst=root, op=reduce_op(op, dtname))
        if RANK == root:
            compare(x, red_expected(op, range(WORLD), n, dt))
    return run


for _dt in REDUCIBLE:
    add(f"reduce[sum,{_dt}]", reduce_case("sum", _dt))
add("reduce[max,int32]", reduce_case("max", "int32"))
add("reduce[min,bfloat16]", reduce_case("min", "bfloat16"))
add("reduce[product,float16]", reduce_case("product", "float16"))


# -- all_gather, all_gather_into_tensor

def all_gather_case(dtname, n=1031):
    def run():
        dt = DT[dtname]
        x = dev(pattern(200 + RANK, n, dt))
        outs = [dev(pattern(900 + j, n, dt)) for j in range(WORLD)]
        dist.all_gather(outs, x)
        for j in range(WORLD):
            compare(outs[j], pattern(200 + j, n, dt), what=f"from rank {j}: ")
    return run


def all_gather_into_tensor_case(dtname, n=1031, stacked=False):
    def run():
        dt = DT[dtname]
        x = dev(pattern(200 + RANK, n, dt))
        out = dev(pattern(901, WORLD * n, dt))
        if stacked:
            out = out.reshape(WORLD, n)
        dist.all_gather_into_tensor(out, x)
        compare(out, torch.cat([pattern(200 + j, n, dt) for j in range(WORLD)]))
    return run


for _dt in ("float32", "bfloat16", "int64", "uint8", "float8_e4m3fn"):
    add(f"all_gather[{_dt}]", all_gather_case(_dt), GLOO_NO_FP8 if _dt in FP8 else None)
for _dt, _ in DTYPES:
    add(f"all_gather_into_tensor[{_dt}]", all_gather_into_tensor_case(_dt),
        GLOO_NO_FP8 if _dt in FP8 else None)
add("all_gather_into_tensor[float32,stacked]", all_gather_into_tensor_case("float32", stacked=True),
    GLOO_NO_STACKED)
add("all_gather_into_tensor[float32,n=1048583]",
    all_gather_into_tensor_case("float32", (1 << 20) + 7))


# -- reduce_scatter, reduce_scatter_tensor
# Rank s's whole input (WORLD*n elements) is red_input(op, s, WORLD*n); rank r gets the
# reduction of the r-th slice.

def reduce_scatter_tensor_case(op, dtname, n=1031):
    def run():
        dt = DT[dtname]
        x = dev(cast(red_input(op, RANK, WORLD * n, dt), dt))
        out = dev(pattern(902, n, dt))
        dist.reduce_scatter_tensor(out, x, op=reduce_op(op, dtname))
        full = red_expected(op, range(WORLD), WORLD * n, dt)
        compare(out, full[RANK * n:(RANK + 1) * n],
                tolerant=(op == "avg" and not is_pow2(WORLD)))
    return run


def reduce_scatter_case(op, dtname, n=1031):
    def run():
        dt = DT[dtname]
        full_in = cast(red_input(op, RANK, WORLD * n, dt), dt)
        ins = [dev(full_in[j * n:(j + 1) * n].clone()) for j in range(WORLD)]
        out = dev(pattern(903, n, dt))
        dist.reduce_scatter(out, ins, op=reduce_op(op, dtname))
        full = red_expected(op, range(WORLD), WORLD * n, dt)
        compare(out, full[RANK * n:(RANK + 1) * n])
    return run


for _dt in REDUCIBLE:
    add(f"reduce_scatter_tensor[sum,{_dt}]", reduce_scatter_tensor_case("sum", _dt))
add("reduce_scatter_tensor[max,int64]", reduce_scatter_tensor_case("max", "int64"))
add("reduce_scatter_tensor[avg,float32]", reduce_scatter_tensor_case("avg", "float32"))
add("reduce_scatter_tensor[avg,bfloat16]", reduce_scatter_tensor_case("avg", "bfloat16"))
add("reduce_scatter_tensor[premul_sum,float32]",
    reduce_scatter_tensor_case("premul_sum", "float32"), GLOO_NO_PREMUL)
add("reduce_scatter_tensor[sum,float32,n=1048583]",
    reduce_scatter_tensor_case("sum", "float32", (1 << 20) + 7))
for _dt in ("float32", "bfloat16", "int64"):
    add(f"reduce_scatter[sum,{_dt}]", reduce_scatter_case("sum", _dt))


# -- all_to_all, all_to_all_single
# Equal splits: rank s's input is pattern(300 + s, WORLD*c); its j-th chunk goes to rank j.
# Unequal splits: rank s sends split(s, d) elements to rank d (some of them 0).

def a2a_split(s, d):
    return ((s * 3 + d * 2) % 4) * 7


def a2a_equal_expected(dt, c):
    return torch.cat([pattern(300 + s, WORLD * c, dt)[RANK * c:(RANK + 1) * c]
                      for s in range(WORLD)])


def a2a_unequal_parts(s, dt):
    """Rank s's input cut into the pieces it sends to each rank."""
    sizes = [a2a_split(s, d) for d in range(WORLD)]
    whole = pattern(400 + s, sum(sizes), dt)
    return list(torch.split(whole, sizes)), sizes


def all_to_all_single_case(dtname, unequal=False, c=257):
    def run():
        dt = DT[dtname]
        if not unequal:
            x = dev(pattern(300 + RANK, WORLD * c, dt))
            out = dev(pattern(904, WORLD * c, dt))
            dist.all_to_all_single(out, x)
            compare(out, a2a_equal_expected(dt, c))
            return
        parts, in_sizes = a2a_unequal_parts(RANK, dt)
        out_sizes = [a2a_split(s, RANK) for s in range(WORLD)]
        x = dev(torch.cat(parts))
        out = dev(pattern(905, sum(out_sizes), dt))
        dist.all_to_all_single(out, x, output_split_sizes=out_sizes, input_split_sizes=in_sizes)
        compare(out, torch.cat([a2a_unequal_parts(s, dt)[0][RANK] for s in range(WORLD)]))
    return run


def all_to_all_case(dtname, unequal=False, c=257):
    def run():
        dt = DT[dtname]
        if unequal:
            parts, _ = a2a_unequal_parts(RANK, dt)
            ins = [dev(p.clone()) for p in parts]
            want = [a2a_unequal_parts(s, dt)[0][RANK] for s in range(WORLD)]
        else:
            whole = pattern(300 + RANK, WORLD * c, dt)
            ins = [dev(whole[j * c:(j + 1) * c].clone()) for j in range(WORLD)]
            want = [pattern(300 + s, WORLD * c, dt)[RANK * c:(RANK + 1) * c] for s in range(WORLD)]
        outs = [dev(pattern(906 + s, w.numel(), dt)) for s, w in enumerate(want)]
        dist.all_to_all(outs, ins)
        for s in range(WORLD):
            compare(outs[s], want[s], what=f"from rank {s}: ")
    return run


for _dt, _ in DTYPES:
    add(f"all_to_all_single[{_dt}]", all_to_all_single_case(_dt),
        GLOO_NO_FP8 if _dt in FP8 else None)
for _dt in ("float32", "int32", "bfloat16"):
    add(f"all_to_all_single[{_dt},unequal]", all_to_all_single_case(_dt, unequal=True))
for _dt in ("float32", "int64", "float8_e5m2"):
    add(f"all_to_all[{_dt}]", all_to_all_case(_dt), GLOO_NO_A2A_LIST)
for _dt in ("float32", "int64"):
    add(f"all_to_all[{_dt},unequal]", all_to_all_case(_dt, unequal=True), GLOO_NO_A2A_LIST)


# -- send/recv, isend/irecv, batch_isend_irecv
# A ring: each rank sends to its right neighbour and receives from its left one. Even ranks
# send first, odd ranks receive first, so that no two neighbours both wait to receive.

def send_recv_case(dtname, n=1031):
    def run():
        if need_two():
            return need_two()
        dt = DT[dtname]
        right, left = peers()
        x = dev(pattern(500 + RANK, n, dt))
        y = dev(pattern(907, n, dt))
        if RANK % 2 == 0:
            dist.send(x, dst=right)
            dist.recv(y, src=left)
        else:
            dist.recv(y, src=left)
            dist.send(x, dst=right)
        compare(y, pattern(500 + left, n, dt))
    return run


def isend_irecv_case(dtname, n=1031):
    def run():
        if need_two():
            return need_two()
        dt = DT[dtname]
        right, left = peers()
        x = dev(pattern(510 + RANK, n, dt))
        y = dev(pattern(908, n, dt))
        if RANK % 2 == 0:
            works = [dist.isend(x, dst=right), dist.irecv(y, src=left)]
        else:
            works = [dist.irecv(y, src=left), dist.isend(x, dst=right)]
        for w in works:
            w.wait()
        compare(y, pattern(510 + left, n, dt))
    return run


def batch_ring_case(dtname, n=1031):
    def run():
        if need_two():
            return need_two()
        dt = DT[dtname]
        right, left = peers()
        x = dev(pattern(520 + RANK, n, dt))
        y = dev(pattern(909, n, dt))
        ops = [dist.P2POp(dist.irecv, y, left), dist.P2POp(dist.isend, x, right)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        compare(y, pattern(520 + left, n, dt))
    return run


def batch_all_pairs_case():
    """Every rank sends a different message to every other rank, in one batch."""
    if need_two():
        return need_two()
    dt = torch.float32
    n = 509
    others = [p for p in range(WORLD) if p != RANK]
    recv = {p: dev(pattern(910, n, dt)) for p in others}
    ops = []
    for p in others:
        ops.append(dist.P2POp(dist.isend, dev(pattern(530 + RANK * 64 + p, n, dt)), p))
        ops.append(dist.P2POp(dist.irecv, recv[p], p))
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for p in others:
        compare(recv[p], pattern(530 + p * 64 + RANK, n, dt), what=f"from rank {p}: ")


for _dt in ("float32", "bfloat16", "int64", "uint8", "float8_e4m3fn"):
    add(f"send_recv[{_dt}]", send_recv_case(_dt))
add("send_recv[float32,n=1048579]", send_recv_case("float32", (1 << 20) + 3))
for _dt in ("float32", "int32"):
    add(f"isend_irecv[{_dt}]", isend_irecv_case(_dt))
for _dt in ("float32", "float16"):
    add(f"batch_isend_irecv[ring,{_dt}]", batch_ring_case(_dt))
add("batch_isend_irecv[ring,float32,n=1048579]", batch_ring_case("float32", (1 << 20) + 3))
add("batch_isend_irecv[all pairs]", batch_all_pairs_case)


# -- gather, scatter

def gather_case(dtname, n=1031):
    def run():
        dt = DT[dtname]
        root = WORLD - 1
        x = dev(pattern(600 + RANK, n, dt))
        outs = [dev(pattern(911, n, dt)) for _ in range(WORLD)] if RANK == root else None
        dist.gather(x, gather_list=outs, dst=root)
        if RANK == root:
            for j in range(WORLD):
                compare(outs[j], pattern(600 + j, n, dt), what=f"from rank {j}: ")
    return run


def scatter_case(dtname, n=1031):
    def run():
        dt = DT[dtname]
        root = 0
        ins = [dev(pattern(700 + j, n, dt)) for j in range(WORLD)] if RANK == root else None
        y = dev(pattern(912, n, dt))
        dist.scatter(y, scatter_list=ins, src=root)
        compare(y, pattern(700 + RANK, n, dt))
    return run


for _dt in ("float32", "int64", "bfloat16"):
    add(f"gather[{_dt}]", gather_case(_dt))
for _dt in ("float32", "int64", "bfloat16"):
    add(f"scatter[{_dt}]", scatter_case(_dt))


# -- barrier: every rank writes a key before the barrier; after it, all keys must be there
# (the last rank is late on purpose).

@check("barrier")
def barrier_case():
    store = default_store()
    tag = "monel-barrier"
    if RANK == WORLD - 1:
        time.sleep(0.3)
    store.set(f"{tag}/{RANK}", "1")
    dist.barrier()
    missing = [j for j in range(WORLD) if not store.check([f"{tag}/{j}"])]
    if missing:
        raise Mismatch(f"barrier returned before ranks {missing} arrived")


# -- new_group: the even ranks; split_group: evens and odds

@check("new_group[even ranks]")
def new_group_case():
    evens = list(range(0, WORLD, 2))
    g = dist.new_group(evens)
    if RANK not in evens:
        return None
    n = 1031
    dt = torch.float32
    if dist.get_rank(g) != evens.index(RANK) or dist.get_world_size(g) != len(evens):
        raise Mismatch(f"group rank {dist.get_rank(g)}/{dist.get_world_size(g)}, expected "
                       f"{evens.index(RANK)}/{len(evens)}")
    x = dev(cast(red_input("sum", RANK, n, dt), dt))
    dist.all_reduce(x, group=g)
    compare(x, red_expected("sum", evens, n, dt), what="all_reduce: ")
    root = evens[-1]
    want = pattern(800 + root, n, torch.int64)
    y = dev(want if RANK == root else pattern(913, n, torch.int64))
    dist.broadcast(y, src=root, group=g)
    compare(y, want, what="broadcast: ")
    dist.destroy_process_group(g)


@check("split_group[evens,odds]", GLOO_NO_SPLIT)
def split_group_case():
    evens = list(range(0, WORLD, 2))
    odds = list(range(1, WORLD, 2))
    parts = [evens] + ([odds] if odds else [])
    g = dist.split_group(split_ranks=parts)
    mine = evens if RANK % 2 == 0 else odds
    if g is None:
        raise Mismatch("split_group returned no group for a member")
    if dist.get_rank(g) != mine.index(RANK) or dist.get_world_size(g) != len(mine):
        raise Mismatch(f"group rank {dist.get_rank(g)}/{dist.get_world_size(g)}, expected "
                       f"{mine.index(RANK)}/{len(mine)}")
    n = 1031
    for dtname in ("int32", "bfloat16"):
        dt = DT[dtname]
        x = dev(cast(red_input("sum", RANK, n, dt), dt))
        dist.all_reduce(x, group=g)
        compare(x, red_expected("sum", mine, n, dt), what=f"all_reduce {dtname}: ")
    out = dev(pattern(914, len(mine) * n, torch.float32))
    dist.all_gather_into_tensor(out, dev(pattern(810 + RANK, n, torch.float32)), group=g)
    compare(out, torch.cat([pattern(810 + j, n, torch.float32) for j in mine]),
            what="all_gather_into_tensor: ")
    dist.destroy_process_group(g)


# -- async work handles

@check("async[all_reduce x3 + all_gather_into_tensor]")
def async_case():
    n = 4099
    dt = torch.float32
    xs = [dev(cast(red_input("sum", RANK, n, dt, salt=k), dt)) for k in range(3)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    g_in = dev(pattern(820 + RANK, n, dt))
    g_out = dev(pattern(915, WORLD * n, dt))
    works.append(dist.all_gather_into_tensor(g_out, g_in, async_op=True))
    for w in works:
        w.wait()
    for k, x in enumerate(xs):
        compare(x, red_expected("sum", range(WORLD), n, dt, salt=k), what=f"all_reduce {k}: ")
    compare(g_out, torch.cat([pattern(820 + j, n, dt) for j in range(WORLD)]),
            what="all_gather_into_tensor: ")
    if DEV.type == "cuda":
        torch.cuda.synchronize(DEV)
    if not all(w.is_completed() for w in works):
        raise Mismatch("a waited and synchronised work is not completed")


# -- CUDA graph: capture copy + all_reduce once, replay twice with new inputs

@check("cuda_graph[all_reduce, 2 replays]", GLOO_NO_GRAPH)
def cuda_graph_case():
    n = 1031
    dt = torch.float32
    src = dev(torch.zeros(n, dtype=dt))
    buf = dev(torch.zeros(n, dtype=dt))
    side = torch.cuda.Stream(device=DEV)
    side.wait_stream(torch.cuda.current_stream(DEV))
    with torch.cuda.stream(side):  # warm-up outside the capture
        for _ in range(2):
            buf.copy_(src)
            dist.all_reduce(buf)
    torch.cuda.current_stream(DEV).wait_stream(side)
    torch.cuda.synchronize(DEV)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        buf.copy_(src)
        dist.all_reduce(buf)
    torch.cuda.synchronize(DEV)
    for replay in range(2):
        src.copy_(dev(cast(red_input("sum", RANK, n, dt, salt=replay * 7), dt)))
        graph.replay()
        torch.cuda.synchronize(DEV)
        compare(buf, red_expected("sum", range(WORLD), n, dt, salt=replay * 7),
                what=f"replay {replay + 1}: ")
    del graph


# -- destroy the process group, create it again with a fresh store on a new port, use it

@check("destroy_process_group + init again")
def recreate_case():
    global STORE_REINIT
    old = default_store()
    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    tmo = datetime.timedelta(seconds=TIMEOUT)
    key = "monel-reinit-port"
    if RANK == 0:
        fresh = dist.TCPStore(host, 0, WORLD, True, timeout=tmo, wait_for_workers=False)
        old.set(key, str(fresh.port))
    else:
        port = int(old.get(key).decode())
    dist.destroy_process_group()
    if dist.is_initialized():
        raise Mismatch("still initialised after destroy_process_group")
    if RANK != 0:
        fresh = dist.TCPStore(host, port, WORLD, False, timeout=tmo)
    STORE_REINIT = fresh
    init_pg(store=fresh)
    if dist.get_rank() != RANK or dist.get_world_size() != WORLD:
        raise Mismatch(f"rank {dist.get_rank()}/{dist.get_world_size()} after init again")
    n = 1031
    for dtname in ("float32", "int64"):
        dt = DT[dtname]
        x = dev(cast(red_input("sum", RANK, n, dt, salt=3), dt))
        dist.all_reduce(x)
        compare(x, red_expected("sum", range(WORLD), n, dt, salt=3), what=f"{dtname}: ")
    y = dev(pattern(830 + RANK, n, torch.int32))
    out = dev(pattern(916, WORLD * n, torch.int32))
    dist.all_gather_into_tensor(out, y)
    compare(out, torch.cat([pattern(830 + j, n, torch.int32) for j in range(WORLD)]),
            what="all_gather_into_tensor: ")


STORE_REINIT = None


# ---------------------------------------------------------------------------------------------
# Running and reporting

def say(line, err=False):
    """One line in one write, so that lines of different ranks sharing a log never mix."""
    stream = sys.stderr if err else sys.stdout
    stream.write(line + "\n")
    stream.flush()


def one_line(s, limit=400):
    s = " ".join(str(s).split())
    return s if len(s) <= limit else s[:limit] + "..."


def run_checks():
    results = []
    for name, fn, gloo_skip in CHECKS:
        if ARGS.only and ARGS.only not in name:
            continue
        if BACKEND == "gloo" and gloo_skip:
            results.append((name, "SKIP", gloo_skip))
            continue
        if RANK == 0:
            say(f"# {name}")
        try:
            why = fn()
            results.append((name, "SKIP", why) if why else (name, "PASS", ""))
        except Exception as e:  # a failure of this check, reported, then on to the next one
            detail = one_line(f"{type(e).__name__}: {e}")
            if not isinstance(e, Mismatch) and os.environ.get("MONEL_TORCH_VERBOSE"):
                traceback.print_exc()
            say(f"rank {RANK}: FAIL {name}: {detail}", err=True)
            results.append((name, "FAIL", detail))
    return results


def report(results, store):
    """Every rank posts its results under its own key; rank 0 merges and prints them."""
    store.set(f"monel-results/{RANK}", json.dumps(results))
    if RANK != 0:
        return any(s == "FAIL" for _, s, _ in results)
    per_rank = {0: results}
    for r in range(1, WORLD):
        try:
            per_rank[r] = json.loads(store.get(f"monel-results/{r}").decode())
        except Exception as e:
            per_rank[r] = [("results of rank %d" % r, "FAIL", one_line(e))]
    order = []
    merged = {}
    for r in range(WORLD):
        for name, status, detail in per_rank[r]:
            if name not in merged:
                order.append(name)
                merged[name] = []
            merged[name].append((r, status, detail))
    for name in order:
        if sum(1 for _ in merged[name]) != WORLD:
            got = sorted(r for r, _, _ in merged[name])
            merged[name].append((-1, "FAIL", f"reported by ranks {got} only"))
    npass = nfail = nskip = 0
    for name in order:
        entries = merged[name]
        fails = [(r, d) for r, s, d in entries if s == "FAIL"]
        skips = [d for _, s, d in entries if s == "SKIP"]
        if fails:
            nfail += 1
            detail = "; ".join((f"rank {r}: {d}" if r >= 0 else d) for r, d in fails[:4])
            if len(fails) > 4:
                detail += f"; and {len(fails) - 4} more ranks"
            say(f"FAIL {name}: {detail}")
        elif len(skips) == len(entries):
            nskip += 1
            say(f"SKIP {name}: {skips[0]}")
        else:
            npass += 1
            say(f"PASS {name}")
    say(f"torch suite: {npass} passed, {nfail} failed, {nskip} skipped on {WORLD} ranks")
    return nfail > 0


def main():
    global ARGS, BACKEND, RANK, WORLD, LOCAL_RANK, DEV, STORE, TIMEOUT
    ARGS = parse_args()
    BACKEND = ARGS.backend
    TIMEOUT = ARGS.timeout
    RANK = int(os.environ.get("RANK", "0"))
    WORLD = int(os.environ.get("WORLD_SIZE", "1"))
    LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
    if BACKEND == "nccl":
        if not torch.cuda.is_available():
            say("FAIL setup: the nccl backend needs GPUs (use --backend gloo on a CPU machine)")
            return 1
        # With fewer GPUs than local ranks the ranks share them (Monel allows that; NVIDIA's
        # NCCL does not, unless each rank is its own host).
        DEV = torch.device("cuda", LOCAL_RANK % torch.cuda.device_count())
        torch.cuda.set_device(DEV)
    init_pg()
    STORE = default_store()
    if RANK == 0:
        say(f"# torch {torch.__version__}, backend {BACKEND}, {WORLD} ranks, {len(CHECKS)} checks; "
            f"library: {library_note()}")
    results = run_checks()
    failed = report(results, STORE)
    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception as e:
            say(f"rank {RANK}: destroy_process_group at exit: {one_line(e)}", err=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
