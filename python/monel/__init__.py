# SPDX-License-Identifier: BSD-3-Clause
"""Monel: Python bindings of the Monel collective communication library.

Two layers:
  * monel.nccl (also monel._nccl): ctypes bindings of every function, enum and
    struct of nccl.h and monel.h, one to one;
  * this package: UniqueId, Communicator, group(), Config, ops, in the style of
    nccl4py, taking NumPy arrays (CPU engine) or CUDA arrays (torch, CuPy).

The library is found through MONEL_LIBRARY, else <repository>/build/lib when
the package runs from a source tree, else the system's libnccl.so.2.
"""

from . import _nccl as nccl
from ._buffers import as_buffer, nccl_dtype, numpy_dtypes, stream_handle
from .core import (
    AVG,
    MAX,
    MIN,
    PROD,
    SUM,
    Buffer,
    Communicator,
    Config,
    MonelError,
    PreMulSum,
    RegisteredBuffer,
    UniqueId,
    Window,
    error_string,
    get_unique_id,
    get_version,
    group,
    group_end,
    group_simulate_end,
    group_start,
    library_path,
    mem_alloc,
    mem_free,
    monel_version,
)

__version__ = "0.1.0"

# NCCL data types by name, for dtype= arguments.
int8 = nccl.ncclInt8
uint8 = nccl.ncclUint8
int32 = nccl.ncclInt32
uint32 = nccl.ncclUint32
int64 = nccl.ncclInt64
uint64 = nccl.ncclUint64
float16 = nccl.ncclFloat16
float32 = nccl.ncclFloat32
float64 = nccl.ncclFloat64
bfloat16 = nccl.ncclBfloat16
float8_e4m3 = nccl.ncclFloat8e4m3
float8_e5m2 = nccl.ncclFloat8e5m2

__all__ = [
    "nccl",
    "as_buffer",
    "nccl_dtype",
    "numpy_dtypes",
    "stream_handle",
    "AVG",
    "MAX",
    "MIN",
    "PROD",
    "SUM",
    "Buffer",
    "Communicator",
    "Config",
    "MonelError",
    "PreMulSum",
    "RegisteredBuffer",
    "UniqueId",
    "Window",
    "error_string",
    "get_unique_id",
    "get_version",
    "group",
    "group_end",
    "group_simulate_end",
    "group_start",
    "library_path",
    "mem_alloc",
    "mem_free",
    "monel_version",
]
