# SPDX-License-Identifier: BSD-3-Clause
"""The Pythonic layer: unique ids, communicators, collectives, groups.

Every method checks its buffers (dtype, size, contiguity) before calling the C
library and raises MonelError when the library returns anything but success.
On the CPU engine a call completes before it returns (the stream is ignored);
on the GPU engine it is queued on the stream.
"""

import contextlib
import ctypes
import dataclasses
from typing import Optional

from . import _nccl as C
from ._buffers import TYPE_NAME, TYPE_SIZE, Buffer, as_buffer, nccl_dtype, stream_handle
from ._errors import MonelError, _check, _last_error, error_string, get_version, library_path, monel_version  # noqa: F401
from ._ids import Config, UniqueId, _config_arg, get_unique_id  # noqa: F401

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

SUM = C.ncclSum
PROD = C.ncclProd
MAX = C.ncclMax
MIN = C.ncclMin
AVG = C.ncclAvg

_OP_NAMES = {"sum": SUM, "prod": PROD, "max": MAX, "min": MIN, "avg": AVG}


def _op_value(op, comm):
    if isinstance(op, PreMulSum):
        if op.comm is not comm:
            raise ValueError("this PreMulSum op belongs to another communicator")
        if op.op is None:
            raise ValueError("this PreMulSum op has been destroyed")
        return op.op
    if isinstance(op, str):
        v = _OP_NAMES.get(op.lower())
        if v is None:
            raise ValueError(
                f"unknown reduction op '{op}': use one of {', '.join(_OP_NAMES)} "
                "or monel.SUM/PROD/MAX/MIN/AVG"
            )
        return v
    if isinstance(op, int) and not isinstance(op, bool):
        return int(op)
    raise TypeError(f"a reduction op must be a name, a monel op constant or a PreMulSum, not {op!r}")


class PreMulSum:
    """A sum that first multiplies every input by a scalar (ncclRedOpCreatePreMulSum).
    Use it as the op of a reduction on the communicator that made it; destroy() it
    when done, or use it as a context manager."""

    def __init__(self, comm, op, dtype, scalar):
        self.comm = comm
        self.op = op
        self.dtype = dtype
        self.scalar = scalar

    def destroy(self):
        if self.op is None:
            return
        op, self.op = self.op, None
        if self.comm._ptr is not None:
            _check(C.ncclRedOpDestroy(op, self.comm._ptr), "ncclRedOpDestroy", self.comm._ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def __int__(self):
        return int(self.op)

    def __repr__(self):
        return f"<PreMulSum op={self.op} scalar={self.scalar} dtype={TYPE_NAME[self.dtype]}>"


# ---- groups ----------------------------------------------------------------


def group_start():
    _check(C.ncclGroupStart(), "ncclGroupStart")


def group_end():
    _check(C.ncclGroupEnd(), "ncclGroupEnd")


@contextlib.contextmanager
def group():
    """Operations issued inside run together at the end of the block
    (ncclGroupStart/ncclGroupEnd). Groups nest. If the block raises, the group
    is still ended and the block's exception is the one propagated."""
    group_start()
    try:
        yield
    except BaseException:
        try:
            group_end()
        except MonelError:
            pass
        raise
    group_end()


def group_simulate_end():
    """End the group without running it; returns the predicted time (microseconds)."""
    info = C.ncclSimInfo_t()
    _check(C.ncclGroupSimulateEnd(ctypes.byref(info)), "ncclGroupSimulateEnd")
    return info.estimatedTime


# ---- memory ----------------------------------------------------------------


def mem_alloc(size):
    """ncclMemAlloc: an address (int) of `size` bytes that peers may map."""
    p = ctypes.c_void_p()
    _check(C.ncclMemAlloc(ctypes.byref(p), int(size)), "ncclMemAlloc")
    return p.value or 0


def mem_free(ptr):
    _check(C.ncclMemFree(ptr), "ncclMemFree")


# ---- communicator ----------------------------------------------------------


class RegisteredBuffer:
    """A buffer registered with ncclCommRegister; deregister() (or leave the
    with-block) to release it."""

    def __init__(self, comm, handle, buf):
        self.comm = comm
        self.handle = handle
        self.buffer = buf

    def deregister(self):
        if self.handle is None:
            return
        h, self.handle = self.handle, None
        if self.comm._ptr is not None:
            self.comm._call("ncclCommDeregister", C.ncclCommDeregister, self.comm._ptr, h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.deregister()


class Window:
    """A window registered with ncclCommWindowRegister; deregister() releases it."""

    def __init__(self, comm, handle, buf, flags):
        self.comm = comm
        self.handle = handle
        self.buffer = buf
        self.flags = flags

    def deregister(self):
        if self.handle is None:
            return
        h, self.handle = self.handle, None
        if self.comm._ptr is not None:
            self.comm._call(
                "ncclCommWindowDeregister", C.ncclCommWindowDeregister, self.comm._ptr, h
            )

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.deregister()


def _rows(matrix, n, name):
    """An n*n C array of size_t from an n x n array-like."""
    if np is not None:
        m = np.asarray(matrix)
        if m.shape != (n, n):
            raise ValueError(f"{name} must be a full {n} x {n} matrix (row i = rank i), not {m.shape}")
        if m.size and (m.min() < 0):
            raise ValueError(f"{name} has a negative entry")
        flat = [int(x) for x in m.reshape(-1)]
    else:  # pragma: no cover
        rows = [list(r) for r in matrix]
        if len(rows) != n or any(len(r) != n for r in rows):
            raise ValueError(f"{name} must be a full {n} x {n} matrix (row i = rank i)")
        flat = [int(x) for r in rows for x in r]
    return (ctypes.c_size_t * (n * n))(*flat), flat


class Communicator:
    """One rank's membership in a group of ranks (ncclComm_t)."""

    def __init__(self, ptr):
        """Wraps an existing ncclComm_t (an int address); use init() to make one."""
        self._ptr = ptr
        self._ops = []  # PreMulSum ops made here, destroyed with the comm

    # -- making and ending ---------------------------------------------------

    @classmethod
    def init(cls, nranks, rank, unique_id, config=None):
        """ncclCommInitRankConfig: join the communicator of unique_id as `rank`."""
        if not isinstance(unique_id, UniqueId):
            unique_id = UniqueId(unique_id)
        comm = C.ncclComm_t()
        cfg, _keep = _config_arg(config)
        res = C.ncclCommInitRankConfig(
            ctypes.byref(comm), int(nranks), unique_id.as_ctypes(), int(rank), cfg
        )
        _check(res, "ncclCommInitRankConfig", comm.value)
        return cls(comm.value)

    @classmethod
    def init_all(cls, devices):
        """ncclCommInitAll: one communicator per device of this process. `devices`
        is a list of device ordinals or a count (devices 0..n-1)."""
        if isinstance(devices, int):
            devlist = None
            n = devices
        else:
            devices = [int(d) for d in devices]
            n = len(devices)
            devlist = (ctypes.c_int * n)(*devices)
        comms = (C.ncclComm_t * n)()
        _check(C.ncclCommInitAll(comms, n, devlist), "ncclCommInitAll")
        return [cls(comms[i]) for i in range(n)]

    @property
    def ptr(self):
        """The ncclComm_t as an int; MonelError when the comm was destroyed."""
        if self._ptr is None:
            raise MonelError(C.ncclInvalidUsage, "Communicator", "the communicator was destroyed")
        return self._ptr

    @property
    def destroyed(self):
        return self._ptr is None

    def _call(self, name, fn, *args):
        return _check(fn(*args), name, self._ptr)

    def finalize(self):
        """ncclCommFinalize: flush outstanding work (collective over the comm)."""
        self._call("ncclCommFinalize", C.ncclCommFinalize, self.ptr)

    def destroy(self):
        """ncclCommDestroy: free the communicator. Safe to call twice."""
        if self._ptr is None:
            return
        self._drop_ops()
        ptr, self._ptr = self._ptr, None
        _check(C.ncclCommDestroy(ptr), "ncclCommDestroy")

    def abort(self):
        """ncclCommAbort: stop pending work and free the communicator."""
        if self._ptr is None:
            return
        for op in self._ops:
            op.op = None
        self._ops = []
        ptr, self._ptr = self._ptr, None
        _check(C.ncclCommAbort(ptr), "ncclCommAbort")

    def revoke(self, flags=C.NCCL_REVOKE_DEFAULT):
        self._call("ncclCommRevoke", C.ncclCommRevoke, self.ptr, int(flags))

    def _drop_ops(self):
        for op in list(self._ops):
            try:
                op.destroy()
            except MonelError:
                pass
        self._ops = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def split(self, color, key, config=None):
        """ncclCommSplit. color None or -1 joins no new comm and returns None."""
        if color is None:
            color = C.NCCL_SPLIT_NOCOLOR
        new = C.ncclComm_t()
        cfg, _keep = _config_arg(config)
        self._call("ncclCommSplit", C.ncclCommSplit, self.ptr, int(color), int(key),
                   ctypes.byref(new), cfg)
        return Communicator(new.value) if new.value else None

    def shrink(self, exclude, config=None, flags=C.NCCL_SHRINK_DEFAULT):
        """ncclCommShrink: a new comm without the ranks in `exclude` (excluded
        ranks do not call it). Returns None if the library gives no comm."""
        exclude = [int(r) for r in exclude]
        arr = (ctypes.c_int * max(1, len(exclude)))(*exclude)
        new = C.ncclComm_t()
        cfg, _keep = _config_arg(config)
        self._call("ncclCommShrink", C.ncclCommShrink, self.ptr, arr, len(exclude),
                   ctypes.byref(new), cfg, int(flags))
        return Communicator(new.value) if new.value else None

    # -- queries -------------------------------------------------------------

    def _int_query(self, name, fn):
        v = ctypes.c_int()
        self._call(name, fn, self.ptr, ctypes.byref(v))
        return v.value

    @property
    def rank(self):
        return self._int_query("ncclCommUserRank", C.ncclCommUserRank)

    @property
    def nranks(self):
        return self._int_query("ncclCommCount", C.ncclCommCount)

    @property
    def device(self):
        """CUDA device ordinal of the comm (-1 on the CPU engine)."""
        return self._int_query("ncclCommCuDevice", C.ncclCommCuDevice)

    @property
    def engine(self):
        """'cpu' or 'gpu' (Monel only)."""
        s = ctypes.c_char_p()
        self._call("ncclMonelCommGetEngine", C.ncclMonelCommGetEngine, self.ptr, ctypes.byref(s))
        return s.value.decode()

    def get_async_error(self):
        """ncclCommGetAsyncError: the result code (0 = none, 7 = in progress)."""
        r = C.ncclResult_t()
        self._call("ncclCommGetAsyncError", C.ncclCommGetAsyncError, self.ptr, ctypes.byref(r))
        return r.value

    def last_error(self):
        return _last_error(self._ptr)

    def __repr__(self):
        if self._ptr is None:
            return "<Communicator destroyed>"
        return f"<Communicator rank {self.rank} of {self.nranks} at {self._ptr:#x}>"

    # -- ops, registration ---------------------------------------------------

    def create_premul_sum(self, scalar, dtype, residence="host"):
        """A PreMulSum op: sum of scalar*input. residence "host" copies the scalar
        now; "device" takes a one-element device buffer read while ops run."""
        dt = nccl_dtype(dtype)
        op = C.ncclRedOp_t()
        if residence in ("host", C.ncclScalarHostImmediate):
            if np is None:  # pragma: no cover
                raise RuntimeError("host scalars need NumPy")
            from ._buffers import np as _np

            npdt = _numpy_dtype_of(dt)
            val = _np.array([scalar], dtype=npdt)
            self._call("ncclRedOpCreatePreMulSum", C.ncclRedOpCreatePreMulSum, ctypes.byref(op),
                       val.ctypes.data, dt, C.ncclScalarHostImmediate, self.ptr)
        elif residence in ("device", C.ncclScalarDevice):
            buf = as_buffer(scalar, "scalar")
            if buf.dtype != dt:
                raise TypeError(f"scalar is {TYPE_NAME[buf.dtype]} but dtype is {TYPE_NAME[dt]}")
            self._call("ncclRedOpCreatePreMulSum", C.ncclRedOpCreatePreMulSum, ctypes.byref(op),
                       buf.ptr, dt, C.ncclScalarDevice, self.ptr)
        else:
            raise ValueError("residence must be 'host' or 'device'")
        p = PreMulSum(self, op.value, dt, scalar)
        self._ops.append(p)
        return p

    def register_buffer(self, buf):
        """ncclCommRegister: returns a RegisteredBuffer (deregister() when done)."""
        b = as_buffer(buf, "buf")
        h = ctypes.c_void_p()
        self._call("ncclCommRegister", C.ncclCommRegister, self.ptr, b.ptr, b.nbytes,
                   ctypes.byref(h))
        return RegisteredBuffer(self, h.value, buf)

    def register_window(self, buf, flags=C.NCCL_WIN_DEFAULT):
        """ncclCommWindowRegister (collective): returns a Window."""
        b = as_buffer(buf, "buf")
        w = C.ncclWindow_t()
        self._call("ncclCommWindowRegister", C.ncclCommWindowRegister, self.ptr, b.ptr, b.nbytes,
                   ctypes.byref(w), int(flags))
        return Window(self, w.value, buf, flags)

    # -- buffer checks -------------------------------------------------------

    def _buf(self, obj, name, stream, writable=False):
        b = as_buffer(obj, name, stream)
        if writable and b.readonly:
            raise ValueError(f"{name} is read-only")
        return b

    @staticmethod
    def _same_dtype(a, b):
        if a.dtype != b.dtype:
            raise TypeError(
                f"sendbuf is {TYPE_NAME[a.dtype]} but recvbuf is {TYPE_NAME[b.dtype]}: "
                "both buffers must have the same dtype"
            )

    @staticmethod
    def _at_least(buf, name, count, why):
        if buf.count < count:
            raise ValueError(f"{name} holds {buf.count} elements but {why} needs {count}")

    def _pair(self, sendbuf, recvbuf, stream):
        s = self._buf(sendbuf, "sendbuf", stream)
        r = s if recvbuf is sendbuf else self._buf(recvbuf, "recvbuf", stream, writable=True)
        if r is s and s.readonly:
            raise ValueError("recvbuf is read-only")
        self._same_dtype(s, r)
        return s, r

    # -- collectives ---------------------------------------------------------

    def allreduce(self, sendbuf, recvbuf, op=SUM, stream=None):
        """recvbuf = op over ranks of sendbuf (count = sendbuf's size). In place
        when recvbuf is sendbuf. Returns recvbuf."""
        opv = _op_value(op, self)
        s, r = self._pair(sendbuf, recvbuf, stream)
        self._at_least(r, "recvbuf", s.count, "allreduce of sendbuf")
        self._call("ncclAllReduce", C.ncclAllReduce, s.ptr, r.ptr, s.count, s.dtype, opv,
                   self.ptr, stream_handle(stream))
        return recvbuf

    def broadcast(self, sendbuf, recvbuf, root, stream=None):
        """recvbuf of every rank = sendbuf of root (count = recvbuf's size).
        sendbuf is read on root only and may be None elsewhere (or recvbuf: in place)."""
        r = self._buf(recvbuf, "recvbuf", stream, writable=True)
        sptr = r.ptr
        if sendbuf is not None and sendbuf is not recvbuf:
            s = self._buf(sendbuf, "sendbuf", stream)
            self._same_dtype(s, r)
            if self.rank == root:
                self._at_least(s, "sendbuf", r.count, "broadcast into recvbuf")
            sptr = s.ptr
        self._call("ncclBroadcast", C.ncclBroadcast, sptr, r.ptr, r.count, r.dtype, int(root),
                   self.ptr, stream_handle(stream))
        return recvbuf

    def bcast(self, buf, root, stream=None):
        """In-place broadcast (ncclBcast)."""
        b = self._buf(buf, "buf", stream, writable=True)
        self._call("ncclBcast", C.ncclBcast, b.ptr, b.count, b.dtype, int(root), self.ptr,
                   stream_handle(stream))
        return buf

    def reduce(self, sendbuf, recvbuf, op, root, stream=None):
        """recvbuf of root = op over ranks of sendbuf (count = sendbuf's size);
        recvbuf may be None on other ranks."""
        opv = _op_value(op, self)
        s = self._buf(sendbuf, "sendbuf", stream)
        rptr = 0
        if recvbuf is not None:
            r = s if recvbuf is sendbuf else self._buf(recvbuf, "recvbuf", stream, writable=True)
            self._same_dtype(s, r)
            if self.rank == root:
                self._at_least(r, "recvbuf", s.count, "reduce of sendbuf")
            rptr = r.ptr
        elif self.rank == root:
            raise ValueError("recvbuf is None on the root")
        self._call("ncclReduce", C.ncclReduce, s.ptr, rptr, s.count, s.dtype, opv, int(root),
                   self.ptr, stream_handle(stream))
        return recvbuf

    def allgather(self, sendbuf, recvbuf, stream=None):
        """recvbuf = every rank's sendbuf, in rank order (count = sendbuf's size,
        recvbuf holds nranks*count). In place when sendbuf is recvbuf: rank r's
        contribution is then already at block r of recvbuf."""
        n = self.nranks
        if sendbuf is recvbuf:
            r = self._buf(recvbuf, "recvbuf", stream, writable=True)
            if r.count % n:
                raise ValueError(f"in-place allgather: recvbuf's {r.count} elements do not split "
                                 f"into {n} equal blocks")
            count = r.count // n
            sptr = r.at(self.rank * count)
        else:
            s, r = self._pair(sendbuf, recvbuf, stream)
            count = s.count
            self._at_least(r, "recvbuf", n * count, f"allgather of {n} ranks x {count}")
            sptr = s.ptr
        self._call("ncclAllGather", C.ncclAllGather, sptr, r.ptr, count, r.dtype, self.ptr,
                   stream_handle(stream))
        return recvbuf

    def reduce_scatter(self, sendbuf, recvbuf, op=SUM, stream=None):
        """recvbuf = block `rank` of op over ranks of sendbuf (count = recvbuf's
        size, sendbuf holds nranks*count). In place when sendbuf is recvbuf: the
        result is block `rank` of the buffer."""
        opv = _op_value(op, self)
        n = self.nranks
        if sendbuf is recvbuf:
            s = self._buf(sendbuf, "sendbuf", stream, writable=True)
            if s.count % n:
                raise ValueError(f"in-place reduce_scatter: sendbuf's {s.count} elements do not "
                                 f"split into {n} equal blocks")
            count = s.count // n
            rptr = s.at(self.rank * count)
        else:
            s, r = self._pair(sendbuf, recvbuf, stream)
            count = r.count
            self._at_least(s, "sendbuf", n * count, f"reduce_scatter of {n} ranks x {count}")
            rptr = r.ptr
        self._call("ncclReduceScatter", C.ncclReduceScatter, s.ptr, rptr, count, s.dtype, opv,
                   self.ptr, stream_handle(stream))
        return recvbuf

    def alltoall(self, sendbuf, recvbuf, stream=None):
        """Block j of sendbuf goes to rank j; block i of recvbuf comes from rank i
        (sendbuf's size / nranks elements per block)."""
        n = self.nranks
        s, r = self._pair(sendbuf, recvbuf, stream)
        if s.count % n:
            raise ValueError(f"alltoall: sendbuf's {s.count} elements do not split into {n} "
                             "equal blocks")
        count = s.count // n
        self._at_least(r, "recvbuf", n * count, f"alltoall of {n} ranks x {count}")
        self._call("ncclAlltoAll", C.ncclAlltoAll, s.ptr, r.ptr, count, s.dtype, self.ptr,
                   stream_handle(stream))
        return recvbuf

    def alltoallv(self, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls,
                  relaybuf=None, stream=None):
        """All-to-all with a count and offset per pair of ranks (ncclAlltoAllv).

        sendcounts, sdispls, recvcounts and rdispls are FULL n x n matrices
        (NumPy arrays or nested lists, in elements), identical on every rank:
        row i describes rank i. Rank i sends sendcounts[i][j] elements from
        sendbuf[sdispls[i][j]:] to rank j and receives recvcounts[i][j] elements
        from rank j into recvbuf[rdispls[i][j]:]. Nothing is exchanged to build
        them: every rank must pass the same matrices. relaybuf is scratch for
        ranks on several hosts (None on one host)."""
        n = self.nranks
        me = self.rank
        s, r = self._pair(sendbuf, recvbuf, stream)
        sc, scl = _rows(sendcounts, n, "sendcounts")
        sd, sdl = _rows(sdispls, n, "sdispls")
        rc, rcl = _rows(recvcounts, n, "recvcounts")
        rd, rdl = _rows(rdispls, n, "rdispls")
        for j in range(n):
            k = me * n + j
            if sdl[k] + scl[k] > s.count:
                raise ValueError(f"alltoallv: block for rank {j} (offset {sdl[k]}, count {scl[k]}) "
                                 f"runs past sendbuf's {s.count} elements")
            if rdl[k] + rcl[k] > r.count:
                raise ValueError(f"alltoallv: block from rank {j} (offset {rdl[k]}, count "
                                 f"{rcl[k]}) runs past recvbuf's {r.count} elements")
        relay_ptr, relay_count = 0, 0
        if relaybuf is not None:
            rb = self._buf(relaybuf, "relaybuf", stream, writable=True)
            self._same_dtype(s, rb)
            relay_ptr, relay_count = rb.ptr, rb.count
        self._call("ncclAlltoAllv", C.ncclAlltoAllv, s.ptr, sc, sd, r.ptr, rc, rd, relay_ptr,
                   relay_count, s.dtype, self.ptr, stream_handle(stream))
        return recvbuf

    def gather(self, sendbuf, recvbuf, root, stream=None):
        """Block i of root's recvbuf = sendbuf of rank i (count = sendbuf's size);
        recvbuf may be None on other ranks."""
        n = self.nranks
        s = self._buf(sendbuf, "sendbuf", stream)
        rptr = 0
        if recvbuf is not None:
            r = self._buf(recvbuf, "recvbuf", stream, writable=True)
            self._same_dtype(s, r)
            if self.rank == root:
                self._at_least(r, "recvbuf", n * s.count, f"gather of {n} ranks x {s.count}")
            rptr = r.ptr
        elif self.rank == root:
            raise ValueError("recvbuf is None on the root")
        self._call("ncclGather", C.ncclGather, s.ptr, rptr, s.count, s.dtype, int(root),
                   self.ptr, stream_handle(stream))
        return recvbuf

    def scatter(self, sendbuf, recvbuf, root, stream=None):
        """recvbuf of rank i = block i of root's sendbuf (count = recvbuf's size);
        sendbuf may be None on other ranks."""
        n = self.nranks
        r = self._buf(recvbuf, "recvbuf", stream, writable=True)
        sptr = 0
        if sendbuf is not None:
            s = self._buf(sendbuf, "sendbuf", stream)
            self._same_dtype(s, r)
            if self.rank == root:
                self._at_least(s, "sendbuf", n * r.count, f"scatter of {n} ranks x {r.count}")
            sptr = s.ptr
        elif self.rank == root:
            raise ValueError("sendbuf is None on the root")
        self._call("ncclScatter", C.ncclScatter, sptr, r.ptr, r.count, r.dtype, int(root),
                   self.ptr, stream_handle(stream))
        return recvbuf

    def send(self, buf, peer, stream=None):
        """Send all of buf to peer (pair with recv on the peer; use group() to
        post several)."""
        b = self._buf(buf, "buf", stream)
        self._call("ncclSend", C.ncclSend, b.ptr, b.count, b.dtype, int(peer), self.ptr,
                   stream_handle(stream))

    def recv(self, buf, peer, stream=None):
        """Receive buf's size of elements from peer into buf."""
        b = self._buf(buf, "buf", stream, writable=True)
        self._call("ncclRecv", C.ncclRecv, b.ptr, b.count, b.dtype, int(peer), self.ptr,
                   stream_handle(stream))
        return buf


def _numpy_dtype_of(dt):
    from . import _buffers

    if dt in (C.ncclBfloat16, C.ncclFloat8e4m3, C.ncclFloat8e5m2):
        for d, code in _buffers._EXTRA_NUMPY.items():
            if code == dt:
                return d
        raise TypeError(f"{TYPE_NAME[dt]} host scalars need the ml_dtypes package")
    return np.dtype(TYPE_NAME[dt])


__all__ = [
    "MonelError",
    "UniqueId",
    "get_unique_id",
    "Config",
    "Communicator",
    "PreMulSum",
    "RegisteredBuffer",
    "Window",
    "group",
    "group_start",
    "group_end",
    "group_simulate_end",
    "mem_alloc",
    "mem_free",
    "library_path",
    "get_version",
    "monel_version",
    "error_string",
    "SUM",
    "PROD",
    "MAX",
    "MIN",
    "AVG",
    "Buffer",
    "TYPE_SIZE",
]
