# SPDX-License-Identifier: BSD-3-Clause
"""Monel's Python bindings on the CPU engine, run by every rank of a job:

    build/bin/monelrun -n 4 python3 -m pytest -q tests/python/test_cpu.py

(tests/python/run does that with MONEL_LIBRARY set to the build's library).
Results are checked exactly: inputs are small integers, so every summation order
gives the same bits; only floating-point avg is compared with a tolerance.
"""

import ctypes
import os
import re
import pickle
import time

import numpy as np
import pytest
from conftest import NRANKS, RANK

import monel
from monel import nccl as C

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

DTYPES = monel.numpy_dtypes()
DTYPE_IDS = [str(d) for d in DTYPES]
LOWP = {C.ncclBfloat16, C.ncclFloat8e4m3, C.ncclFloat8e5m2}
OPS = ["sum", "prod", "max", "min", "avg"]
COUNT = 1031  # odd, spans several engine chunks for small types


def inputs(op, dtype, r, count=COUNT):
    """Rank r's input: small integers whose reduction is exact in every dtype."""
    k = np.arange(count)
    if monel.nccl_dtype(dtype) in LOWP:
        v = (r % 2) + (k % 2)  # partial sums <= 2*NRANKS: exact in fp8 too
    elif op == "prod":
        v = 1 + ((r + k) % 2)
    elif op == "avg":
        v = 2 * (r + 1) + NRANKS * (k % 3)  # sum divisible by NRANKS
    else:
        v = (r + 1) + (k % 3)
    return v.astype(np.float64).astype(dtype)


def expected(op, dtype, count=COUNT, nranks=NRANKS):
    x = np.stack([inputs(op, dtype, r, count).astype(np.float64) for r in range(nranks)])
    e = {"sum": x.sum(0), "prod": x.prod(0), "max": x.max(0), "min": x.min(0),
         "avg": x.sum(0) / nranks}[op]
    return e.astype(dtype)


def same(a, b):
    np.testing.assert_array_equal(a.astype(np.float64), b.astype(np.float64))


# ---- library and ctypes layer ------------------------------------------------


def test_library_is_monel():
    path = monel.library_path()
    assert os.path.isfile(path)
    if os.environ.get("MONEL_LIBRARY"):
        assert os.path.realpath(path) == os.path.realpath(os.environ["MONEL_LIBRARY"])
    assert monel.monel_version().startswith("Monel")
    assert C.is_monel()
    # The library implements 2.32.3; these bindings keep 2.28.9's layout (which it accepts).
    assert monel.get_version() == 23203 and C.NCCL_VERSION_CODE == 22809


def test_every_function_bound():
    lib = C.load()
    for name, (restype, argtypes) in C.FUNCTIONS.items():
        fn = getattr(lib, name)
        assert fn.argtypes == argtypes and fn.restype == restype, name
        assert getattr(lib, "p" + name), "p" + name
    assert len(C.FUNCTIONS) == 56  # 52 of nccl.h, 4 of monel.h


def test_topo_info():
    """ncclMonelTopoInfo: success, and every line in monel-info --topo's form (none without a GPU
    or NCCL_TOPO_FILE)."""
    lib = C.load()
    buf = ctypes.create_string_buffer(1 << 16)
    assert lib.ncclMonelTopoInfo(buf, len(buf)) == 0
    pat = re.compile(r"^GPU -?[0-9]+ [0-9a-f:.]+ -> NIC \S+ \S+ [A-Z]{3} [0-9.]+$")
    for line in buf.value.decode().splitlines():
        assert pat.match(line), line
    assert lib.ncclMonelTopoInfo(buf, 0) == 4  # ncclInvalidArgument


def test_struct_layout():
    assert ctypes.sizeof(C.ncclConfig_t) == 80
    assert ctypes.sizeof(C.ncclUniqueId) == 128
    assert ctypes.sizeof(C.ncclSimInfo_t) == 24
    assert ctypes.sizeof(C.ncclDevComm_t) == 200
    assert ctypes.sizeof(C.ncclTeam_t) == 12
    assert ctypes.sizeof(C.ncclDevCommRequirements_t) == 56
    offs = {n: getattr(C.ncclConfig_t, n).offset for n, _ in C.ncclConfig_t._fields_}
    assert offs["blocking"] == 16 and offs["netName"] == 32 and offs["commName"] == 48
    assert offs["nvlinkCentricSched"] == 76
    cfg = C.NCCL_CONFIG_INITIALIZER()
    assert (cfg.size, cfg.magic, cfg.version) == (80, 0xCAFEBEEF, 22809)
    assert cfg.blocking == cfg.nvlinkCentricSched == C.NCCL_CONFIG_UNDEF_INT == -(2**31)
    assert cfg.netName is None and cfg.commName is None


def test_enums():
    assert (C.ncclSum, C.ncclProd, C.ncclMax, C.ncclMin, C.ncclAvg, C.ncclNumOps) == tuple(range(6))
    assert (monel.SUM, monel.PROD, monel.MAX, monel.MIN, monel.AVG) == tuple(range(5))
    assert C.ncclFloat8e5m2 == 11 and C.ncclNumTypes == 12 and C.ncclInProgress == 7
    assert C.NCCL_VERSION(2, 8, 4) == 2804 and C.NCCL_VERSION(2, 28, 9) == 22809


def test_error_strings():
    assert monel.error_string(C.ncclInvalidArgument)
    e = monel.MonelError(C.ncclInvalidUsage, "ncclX", "why")
    assert e.result == 5 and "ncclInvalidUsage" in str(e) and "why" in str(e)


def test_raw_ctypes_call(comm):
    """The 1:1 layer by itself: ncclAllReduce through C.* directly."""
    a = np.full(16, RANK + 1, np.int32)
    b = np.zeros_like(a)
    res = C.ncclAllReduce(a.ctypes.data, b.ctypes.data, a.size, C.ncclInt32, C.ncclSum,
                          comm.ptr, None)
    assert res == C.ncclSuccess
    assert np.all(b == NRANKS * (NRANKS + 1) // 2)


# ---- unique id, config, communicator lifecycle --------------------------------


def test_unique_id_bytes_and_pickle():
    uid = monel.get_unique_id()
    raw = bytes(uid)
    assert len(raw) == 128
    assert monel.UniqueId.from_bytes(raw) == uid
    assert pickle.loads(pickle.dumps(uid)) == uid
    with pytest.raises(ValueError):
        monel.UniqueId(b"short")


def test_properties(comm):
    assert comm.rank == RANK
    assert comm.nranks == NRANKS
    assert comm.device == -1
    assert comm.engine == "cpu"
    assert comm.get_async_error() == C.ncclSuccess
    assert f"rank {RANK} of {NRANKS}" in repr(comm)


def test_config_to_ctypes():
    cfg = monel.Config(blocking=False, min_ctas=2, max_ctas=8, comm_name="py",
                       net_name="Socket", split_share=True).to_ctypes()
    assert cfg.blocking == 0 and cfg.minCTAs == 2 and cfg.maxCTAs == 8
    assert cfg.commName == b"py" and cfg.netName == b"Socket" and cfg.splitShare == 1
    assert cfg.cgaClusterSize == C.NCCL_CONFIG_UNDEF_INT
    assert cfg.size == 80 and cfg.magic == 0xCAFEBEEF


def test_init_with_config_and_finalize():
    uid = monel.get_unique_id()
    c = monel.Communicator.init(NRANKS, RANK, uid, monel.Config(comm_name="cfg", blocking=True))
    a = np.ones(8, np.float64)
    c.allreduce(a, a, monel.SUM)
    assert np.all(a == NRANKS)
    c.finalize()
    c.destroy()
    assert c.destroyed
    c.destroy()  # twice is fine


def test_init_nonblocking():
    c = monel.Communicator.init(NRANKS, RANK, monel.get_unique_id(), {"blocking": False})
    deadline = time.monotonic() + 60
    while c.get_async_error() == C.ncclInProgress:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert c.get_async_error() == C.ncclSuccess
    a = np.ones(4, np.int64)
    c.allreduce(a, a)
    while c.get_async_error() == C.ncclInProgress:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    assert np.all(a == NRANKS)
    c.destroy()


def test_init_bad_config_magic():
    cfg = C.ncclConfig_t()
    cfg.magic = 0
    with pytest.raises(monel.MonelError) as e:
        monel.Communicator.init(NRANKS, RANK, monel.get_unique_id(), cfg)
    assert e.value.result == C.ncclInvalidArgument


def test_context_manager_and_abort():
    with monel.Communicator.init(NRANKS, RANK, monel.get_unique_id()) as c:
        assert c.nranks == NRANKS
    assert c.destroyed
    c2 = monel.Communicator.init(NRANKS, RANK, monel.get_unique_id())
    c2.abort()
    assert c2.destroyed


def test_init_all_in_one_process():
    comms = monel.Communicator.init_all(2)
    try:
        assert [c.rank for c in comms] == [0, 1]
        assert all(c.nranks == 2 for c in comms)
        bufs = [np.full(5, i + 1, np.float32) for i in range(2)]
        with monel.group():
            for c, b in zip(comms, bufs):
                c.allreduce(b, b, "sum")
        for b in bufs:
            assert np.all(b == 3)
    finally:
        for c in comms:
            c.destroy()


def test_destroyed_comm_raises():
    c = monel.Communicator.init(NRANKS, RANK, monel.get_unique_id())
    c.destroy()
    a = np.ones(4, np.float32)
    with pytest.raises(monel.MonelError, match="destroyed"):
        c.allreduce(a, a)
    with pytest.raises(monel.MonelError):
        c.rank


# ---- split, shrink ------------------------------------------------------------


def test_split_even_odd(comm):
    sub = comm.split(RANK % 2, RANK)
    try:
        assert sub.nranks == (NRANKS + 1 - RANK % 2) // 2
        assert sub.rank == RANK // 2
        a = np.full(10, RANK, np.int32)
        sub.allreduce(a, a, "sum")
        assert np.all(a == sum(r for r in range(NRANKS) if r % 2 == RANK % 2))
    finally:
        sub.destroy()


def test_split_nocolor(comm):
    color = 0 if RANK < NRANKS // 2 or NRANKS == 1 else None
    sub = comm.split(color, -RANK, config=monel.Config(comm_name="half"))
    if color is None:
        assert sub is None
        return
    try:
        assert sub.nranks == max(1, NRANKS // 2)
        assert sub.rank == sub.nranks - 1 - RANK  # key -rank reverses the order
    finally:
        sub.destroy()


@pytest.mark.skipif(NRANKS < 2, reason="needs 2 ranks")
def test_shrink(comm):
    gone = NRANKS - 1
    if RANK == gone:
        return  # an excluded rank does not call shrink
    small = comm.shrink([gone])
    try:
        assert small.nranks == NRANKS - 1 and small.rank == RANK
        a = np.ones(3, np.uint8)
        small.allreduce(a, a)
        assert np.all(a == NRANKS - 1)
    finally:
        small.destroy()


# ---- allreduce: every dtype x op ------------------------------------------------


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_allreduce(comm, dtype, op):
    send = inputs(op, dtype, RANK)
    recv = np.zeros_like(send)
    assert comm.allreduce(send, recv, op) is recv
    exp = expected(op, dtype)
    if op == "avg" and dtype.kind == "f":
        np.testing.assert_allclose(recv.astype(np.float64), exp.astype(np.float64), rtol=1e-2)
    else:
        same(recv, exp)
    assert np.array_equal(send, inputs(op, dtype, RANK))  # sendbuf untouched


@pytest.mark.parametrize("op", [monel.SUM, "MAX", C.ncclMin])
def test_allreduce_in_place_and_op_spellings(comm, op):
    buf = inputs("sum", np.int32, RANK)
    comm.allreduce(buf, buf, op)
    name = {monel.SUM: "sum", "MAX": "max", C.ncclMin: "min"}[op]
    same(buf, expected(name, np.int32))


def test_allreduce_count_zero(comm):
    a = np.zeros(0, np.float32)
    comm.allreduce(a, np.zeros(0, np.float32))


def test_allreduce_multidim_and_larger_recv(comm):
    send = np.full((3, 5), RANK + 1, np.float32)
    recv = np.full(20, -1, np.float32)
    comm.allreduce(send, recv)
    assert np.all(recv[:15] == NRANKS * (NRANKS + 1) / 2) and np.all(recv[15:] == -1)


def test_allreduce_dlpack_buffer(comm):
    """A buffer seen only through DLPack (as torch tensors are)."""

    class DLOnly:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.full(9, RANK + 1, np.int64)
    b = np.zeros_like(a)
    comm.allreduce(DLOnly(a), DLOnly(b))
    assert np.all(b == NRANKS * (NRANKS + 1) // 2)


# ---- the other collectives --------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_broadcast(comm, dtype, engine_may_lack):
    root = NRANKS - 1
    send = inputs("sum", dtype, 7)
    recv = np.zeros_like(send)
    engine_may_lack(comm.broadcast, send if RANK == root else None, recv, root)
    same(recv, send)


def test_broadcast_in_place_and_bcast(comm, engine_may_lack):
    buf = np.arange(100, dtype=np.float32) if RANK == 0 else np.zeros(100, np.float32)
    engine_may_lack(comm.broadcast, buf, buf, 0)
    same(buf, np.arange(100, dtype=np.float32))
    buf2 = np.full(7, RANK, np.int8)
    engine_may_lack(comm.bcast, buf2, NRANKS - 1)
    assert np.all(buf2 == NRANKS - 1)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reduce(comm, dtype, op, engine_may_lack):
    root = 1 % NRANKS
    send = inputs(op, dtype, RANK)
    recv = np.zeros_like(send) if RANK == root else None
    engine_may_lack(comm.reduce, send, recv, op, root)
    if RANK == root:
        exp = expected(op, dtype)
        if op == "avg" and dtype.kind == "f":
            np.testing.assert_allclose(recv.astype(float), exp.astype(float), rtol=1e-2)
        else:
            same(recv, exp)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_allgather(comm, dtype, engine_may_lack):
    send = inputs("sum", dtype, RANK, 33)
    recv = np.zeros(33 * NRANKS, dtype)
    engine_may_lack(comm.allgather, send, recv)
    same(recv, np.concatenate([inputs("sum", dtype, r, 33) for r in range(NRANKS)]))


def test_allgather_in_place(comm, engine_may_lack):
    buf = np.zeros((NRANKS, 6), np.int32)
    buf[RANK] = RANK + 10
    engine_may_lack(comm.allgather, buf, buf)
    assert np.array_equal(buf[:, 0], np.arange(NRANKS) + 10)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reduce_scatter(comm, dtype, op, engine_may_lack):
    n = 17
    send = inputs(op, dtype, RANK, n * NRANKS)
    recv = np.zeros(n, dtype)
    engine_may_lack(comm.reduce_scatter, send, recv, op)
    exp = expected(op, dtype, n * NRANKS)[RANK * n:(RANK + 1) * n]
    if op == "avg" and dtype.kind == "f":
        np.testing.assert_allclose(recv.astype(float), exp.astype(float), rtol=1e-2)
    else:
        same(recv, exp)


def test_reduce_scatter_in_place(comm, engine_may_lack):
    buf = np.full((NRANKS, 4), RANK + 1, np.float64)
    engine_may_lack(comm.reduce_scatter, buf, buf, "sum")
    assert np.all(buf[RANK] == NRANKS * (NRANKS + 1) / 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_alltoall(comm, dtype, engine_may_lack):
    n = 5
    # Block j of rank r holds r*NRANKS + j (small enough for fp8 when NRANKS <= 2).
    send = np.repeat(np.arange(NRANKS) + RANK * NRANKS, n).astype(np.float64)
    if monel.nccl_dtype(dtype) in LOWP:
        send = np.repeat((np.arange(NRANKS) + RANK) % 4, n).astype(np.float64)
    send = send.astype(dtype)
    recv = np.zeros_like(send)
    engine_may_lack(comm.alltoall, send, recv)
    if monel.nccl_dtype(dtype) in LOWP:
        exp = np.repeat((np.arange(NRANKS) + RANK) % 4, n)
    else:
        exp = np.repeat(np.arange(NRANKS) * NRANKS + RANK, n)
    same(recv, exp.astype(dtype))


def _alltoallv_matrices():
    i, j = np.meshgrid(np.arange(NRANKS), np.arange(NRANKS), indexing="ij")
    sc = (i + 2 * j) % 3 + 1
    rc = sc.T.copy()
    sd = np.zeros_like(sc)
    sd[:, 1:] = np.cumsum(sc, axis=1)[:, :-1]
    rd = np.zeros_like(rc)
    rd[:, 1:] = np.cumsum(rc, axis=1)[:, :-1]
    rd += 1  # leave a gap at the front of recvbuf
    return sc, sd, rc, rd


@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.uint8)],
                         ids=str)
def test_alltoallv(comm, dtype, engine_may_lack):
    sc, sd, rc, rd = _alltoallv_matrices()
    send = np.concatenate([np.full(sc[RANK, p], 10 * RANK + p) for p in range(NRANKS)])
    send = send.astype(dtype)
    recv = np.full(rc[RANK].sum() + 1, 99, dtype)
    engine_may_lack(comm.alltoallv, send, sc, sd, recv, rc, rd)
    exp = np.concatenate([[99]] + [np.full(rc[RANK, p], 10 * p + RANK) for p in range(NRANKS)])
    same(recv, exp.astype(dtype))


def test_alltoallv_lists_and_checks(comm, engine_may_lack):
    sc, sd, rc, rd = _alltoallv_matrices()
    send = np.zeros(sc[RANK].sum(), np.int64)
    recv = np.zeros(rc[RANK].sum() + 1, np.int64)
    with pytest.raises(ValueError, match="full"):
        comm.alltoallv(send, sc[RANK], sd[RANK], recv, rc[RANK], rd[RANK])
    with pytest.raises(ValueError, match="past sendbuf"):
        comm.alltoallv(send[:-1], sc, sd, recv, rc, rd)
    engine_may_lack(comm.alltoallv, send, sc.tolist(), sd.tolist(), recv, rc.tolist(), rd.tolist())


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gather(comm, dtype, engine_may_lack):
    root = NRANKS // 2
    send = inputs("sum", dtype, RANK, 11)
    recv = np.zeros(11 * NRANKS, dtype) if RANK == root else None
    engine_may_lack(comm.gather, send, recv, root)
    if RANK == root:
        same(recv, np.concatenate([inputs("sum", dtype, r, 11) for r in range(NRANKS)]))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_scatter(comm, dtype, engine_may_lack):
    root = 0
    full = np.concatenate([inputs("sum", dtype, r, 13) for r in range(NRANKS)])
    recv = np.zeros(13, dtype)
    engine_may_lack(comm.scatter, full if RANK == root else None, recv, root)
    same(recv, inputs("sum", dtype, RANK, 13))


# ---- point to point and groups ------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_send_recv_ring_in_group(comm, dtype, engine_may_lack):
    nxt, prv = (RANK + 1) % NRANKS, (RANK - 1) % NRANKS
    send = inputs("sum", dtype, RANK, 21)
    recv = np.zeros_like(send)

    def exchange():
        with monel.group():
            comm.send(send, nxt)
            comm.recv(recv, prv)

    engine_may_lack(exchange)
    same(recv, inputs("sum", dtype, prv, 21))


@pytest.mark.skipif(NRANKS < 2, reason="needs 2 ranks")
def test_send_recv_pairs_without_group(comm, engine_may_lack):
    """Even ranks send first, odd ranks receive first: no group needed."""
    peer = RANK ^ 1
    if peer >= NRANKS:
        return
    out = np.full(6, RANK, np.int32)
    inb = np.zeros(6, np.int32)

    def exchange():
        if RANK % 2 == 0:
            comm.send(out, peer)
            comm.recv(inb, peer)
        else:
            comm.recv(inb, peer)
            comm.send(out, peer)

    engine_may_lack(exchange)
    assert np.all(inb == peer)


def test_group_of_several_collectives(comm):
    a = np.full(8, RANK + 1, np.float32)
    b = np.full(16, RANK + 1, np.int64)
    c = np.zeros(8, np.float32)
    with monel.group():
        comm.allreduce(a, c, "sum")
        comm.allreduce(b, b, "max")
        with monel.group():  # nesting
            comm.allreduce(a, a, "min")
    assert np.all(c == NRANKS * (NRANKS + 1) / 2)
    assert np.all(b == NRANKS)
    assert np.all(a == 1)


def test_group_mixed_ops(comm, engine_may_lack):
    x = np.full(4, RANK + 1, np.int32)
    y = np.zeros(4 * NRANKS, np.int32)
    z = np.zeros(4, np.int32)
    w = np.zeros(4, np.int32)

    def body():
        with monel.group():
            comm.allreduce(x, z, "sum")
            comm.allgather(x, y)
            comm.send(x, (RANK + 1) % NRANKS)
            comm.recv(w, (RANK - 1) % NRANKS)

    engine_may_lack(body)
    assert np.all(z == NRANKS * (NRANKS + 1) // 2)
    assert np.array_equal(y.reshape(NRANKS, 4)[:, 0], np.arange(NRANKS) + 1)
    assert np.all(w == (RANK - 1) % NRANKS + 1)


def test_group_body_error_still_ends_group(comm):
    with pytest.raises(ZeroDivisionError):
        with monel.group():
            1 / 0
    a = np.ones(2, np.float32)
    comm.allreduce(a, a)  # the thread is not left inside a group
    assert np.all(a == NRANKS)


def test_group_simulate_end():
    monel.group_start()
    t = monel.group_simulate_end()
    assert isinstance(t, float)


# ---- PreMulSum, registration, memory ---------------------------------------------------


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64),
                                   np.dtype(np.float16), np.dtype(np.int32)], ids=str)
def test_premul_sum(comm, dtype):
    with comm.create_premul_sum(2, dtype) as op:
        a = np.full(12, RANK + 1, dtype)
        comm.allreduce(a, a, op)
    assert np.all(a == NRANKS * (NRANKS + 1))
    assert op.op is None


def test_premul_sum_reduce_scatter_and_destroy(comm, engine_may_lack):
    op = comm.create_premul_sum(3.0, "float32")
    send = np.ones(4 * NRANKS, np.float32)
    recv = np.zeros(4, np.float32)
    engine_may_lack(comm.reduce_scatter, send, recv, op)
    op.destroy()
    op.destroy()  # idempotent
    assert np.all(recv == 3 * NRANKS)
    with pytest.raises(ValueError, match="destroyed"):
        comm.allreduce(send, send, op)


def test_premul_sum_of_other_comm_rejected(comm):
    sub = comm.split(0, RANK)
    try:
        op = sub.create_premul_sum(1.0, np.float32)
        a = np.ones(2, np.float32)
        with pytest.raises(ValueError, match="another communicator"):
            comm.allreduce(a, a, op)
        op.destroy()
    finally:
        sub.destroy()


def test_premul_sum_bad_residence(comm):
    with pytest.raises(ValueError, match="residence"):
        comm.create_premul_sum(1.0, np.float32, residence="moon")


def test_register_buffer(comm):
    a = np.ones(1024, np.float32)
    reg = comm.register_buffer(a)
    assert reg.handle is not None
    comm.allreduce(a, a)
    reg.deregister()
    reg.deregister()
    assert np.all(a == NRANKS)
    with comm.register_buffer(a) as reg2:
        assert reg2.handle is not None


def test_register_window(comm):
    a = np.ones(4096, np.uint8)
    win = comm.register_window(a)
    assert win.handle
    win.deregister()
    with comm.register_window(a, C.NCCL_WIN_DEFAULT):
        pass


def test_mem_alloc():
    p = monel.mem_alloc(4096)
    assert p
    ctypes.memset(p, 1, 4096)
    monel.mem_free(p)


# ---- errors ------------------------------------------------------------------------------


def test_bad_op_name(comm):
    a = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="unknown reduction op 'mean'"):
        comm.allreduce(a, a, "mean")
    with pytest.raises(TypeError):
        comm.allreduce(a, a, 1.5)


def test_invalid_op_value_from_library(comm):
    a = np.ones(4, np.float32)
    with pytest.raises(monel.MonelError) as e:
        comm.allreduce(a, a, 1234)
    assert e.value.result == C.ncclInvalidArgument


def test_dtype_mismatch(comm):
    with pytest.raises(TypeError, match="same dtype"):
        comm.allreduce(np.ones(4, np.float32), np.ones(4, np.float64))
    with pytest.raises(TypeError, match="same dtype"):
        comm.allgather(np.ones(4, np.int32), np.ones(4 * NRANKS, np.int64))


def test_recv_too_small(comm):
    with pytest.raises(ValueError, match="recvbuf holds 3 elements"):
        comm.allreduce(np.ones(4, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="recvbuf"):
        comm.allgather(np.ones(4, np.float32), np.ones(4 * NRANKS - 1, np.float32))
    with pytest.raises(ValueError, match="sendbuf"):
        comm.reduce_scatter(np.ones(4, np.float32), np.ones(4, np.float32) if NRANKS > 1
                            else np.ones(5, np.float32))


def test_unsupported_dtypes_and_buffers(comm):
    with pytest.raises(TypeError, match="NCCL has no data type"):
        comm.allreduce(np.ones(4, np.complex64), np.ones(4, np.complex64))
    with pytest.raises(TypeError, match="NCCL has no data type"):
        comm.allreduce(np.ones(4, np.int16), np.ones(4, np.int16))
    with pytest.raises(TypeError, match="not a buffer"):
        comm.allreduce([1, 2, 3], [0, 0, 0])
    with pytest.raises(ValueError, match="contiguous"):
        a = np.ones(8, np.float32)[::2]
        comm.allreduce(a, a)
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        comm.allreduce(np.ones(4, np.float32), ro)


def test_bad_root_from_library(comm):
    a = np.ones(4, np.float32)
    with pytest.raises(monel.MonelError) as e:
        comm.broadcast(a, a, NRANKS + 3)
    assert e.value.result == C.ncclInvalidArgument
    assert "root" in e.value.message


# ---- helpers ----------------------------------------------------------------------------


def test_stream_handles():
    class CS:
        def __cuda_stream__(self):
            return (0, 1234)

    class Torchish:
        cuda_stream = 77

    class Cupyish:
        ptr = 88

    assert monel.stream_handle(None) == 0
    assert monel.stream_handle(5) == 5
    assert monel.stream_handle(CS()) == 1234
    assert monel.stream_handle(Torchish()) == 77
    assert monel.stream_handle(Cupyish()) == 88
    with pytest.raises(TypeError):
        monel.stream_handle("x")


def test_dtype_mapping():
    names = {"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5,
             "float16": 6, "float32": 7, "float64": 8}
    for n, code in names.items():
        assert monel.nccl_dtype(np.dtype(n)) == code
        assert monel.nccl_dtype(n) == code
    assert monel.nccl_dtype("bfloat16") == C.ncclBfloat16
    if ml_dtypes is not None:
        assert monel.nccl_dtype(ml_dtypes.bfloat16) == C.ncclBfloat16
        assert monel.nccl_dtype(ml_dtypes.float8_e4m3fn) == C.ncclFloat8e4m3
        assert monel.nccl_dtype(ml_dtypes.float8_e5m2) == C.ncclFloat8e5m2
        assert len(DTYPES) == 12
    b = monel.as_buffer(np.zeros((2, 3), np.uint64))
    assert (b.count, b.dtype, b.nbytes, b.device) == (6, C.ncclUint64, 48, None)
