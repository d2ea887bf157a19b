# SPDX-License-Identifier: BSD-3-Clause
"""Monel's Python bindings on GPUs: torch tensors and CuPy arrays on 2 GPUs.

Run by tests/python/run (one process; the two communicators come from
Communicator.init_all and are driven in one group). Skipped when torch or CuPy,
or two GPUs, are missing, or when the library has no CUDA engine.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import monel  # noqa: E402
from conftest import unsupported  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
try:
    import cupy
except ImportError:
    cupy = None


def _gpu_count():
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.device_count()
    if cupy is not None:
        try:
            return cupy.cuda.runtime.getDeviceCount()
        except Exception:
            return 0
    return 0


NGPU = _gpu_count()
pytestmark = pytest.mark.skipif(NGPU < 2, reason="needs 2 GPUs and torch or CuPy")


@pytest.fixture(scope="module")
def comms():
    cs = monel.Communicator.init_all([0, 1])
    if cs[0].engine != "gpu":
        for c in cs:
            c.destroy()
        pytest.skip("the library was built without the CUDA engine")
    yield cs
    for c in cs:
        c.destroy()


def _may_lack(fn):
    try:
        fn()
    except monel.MonelError as e:
        if unsupported(e):
            pytest.xfail(f"GPU engine does not support it yet: {e}")
        raise


def test_devices(comms):
    assert [c.device for c in comms] == [0, 1]
    assert [c.rank for c in comms] == [0, 1]


needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
needs_cupy = pytest.mark.skipif(cupy is None, reason="CuPy is not installed")

TORCH_DTYPES = ["int8", "uint8", "int32", "int64", "float16", "float32", "float64", "bfloat16"]


@needs_torch
@pytest.mark.parametrize("dtype", TORCH_DTYPES)
def test_torch_allreduce(comms, dtype):
    dt = getattr(torch, dtype)
    xs = [torch.full((1000,), d + 1, dtype=dt, device=f"cuda:{d}") for d in range(2)]
    ys = [torch.zeros(1000, dtype=dt, device=f"cuda:{d}") for d in range(2)]
    streams = [torch.cuda.current_stream(d) for d in range(2)]
    with monel.group():
        for c, x, y, s in zip(comms, xs, ys, streams):
            c.allreduce(x, y, "sum", stream=s)
    for d in range(2):
        torch.cuda.synchronize(d)
        assert torch.all(ys[d] == 3).item()


@needs_torch
def test_torch_in_place_and_premul(comms):
    xs = [torch.full((64,), 2.0, device=f"cuda:{d}") for d in range(2)]
    ops = [c.create_premul_sum(0.5, "float32") for c in comms]
    with monel.group():
        for c, x, op in zip(comms, xs, ops):
            c.allreduce(x, x, op, stream=torch.cuda.current_stream(x.device))
    for op in ops:
        op.destroy()
    for x in xs:
        torch.cuda.synchronize(x.device)
        assert torch.all(x == 2.0).item()


@needs_torch
def test_torch_dtype_mismatch(comms):
    x = torch.zeros(4, dtype=torch.float32, device="cuda:0")
    y = torch.zeros(4, dtype=torch.float16, device="cuda:0")
    with pytest.raises(TypeError, match="same dtype"):
        comms[0].allreduce(x, y)


@needs_torch
def test_torch_allgather_and_broadcast(comms):
    xs = [torch.full((8,), d + 1, dtype=torch.int32, device=f"cuda:{d}") for d in range(2)]
    ys = [torch.zeros(16, dtype=torch.int32, device=f"cuda:{d}") for d in range(2)]

    def body():
        with monel.group():
            for c, x, y in zip(comms, xs, ys):
                c.allgather(x, y, stream=torch.cuda.current_stream(x.device))
        with monel.group():
            for c, x in zip(comms, xs):
                c.broadcast(x, x, 1, stream=torch.cuda.current_stream(x.device))

    _may_lack(body)
    for d in range(2):
        torch.cuda.synchronize(d)
        assert ys[d].tolist() == [1] * 8 + [2] * 8
        assert torch.all(xs[d] == 2).item()


@needs_cupy
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint64",
                                   "float16", "float32", "float64"])
def test_cupy_allreduce(comms, dtype):
    xs, ys, ss = [], [], []
    for d in range(2):
        with cupy.cuda.Device(d):
            xs.append(cupy.full(513, d + 1, dtype=dtype))
            ys.append(cupy.zeros(513, dtype=dtype))
            ss.append(cupy.cuda.Stream(non_blocking=True))
    with monel.group():
        for c, x, y, s in zip(comms, xs, ys, ss):
            c.allreduce(x, y, "max", stream=s)
    for d in range(2):
        with cupy.cuda.Device(d):
            ss[d].synchronize()
            assert bool((ys[d] == 2).all())
