# SPDX-License-Identifier: BSD-3-Clause
"""Turning user buffers and streams into (pointer, element count, NCCL dtype).

Accepted buffers, in the order they are tried:
  * NumPy arrays (and anything exposing __array_interface__): host memory;
  * objects exposing __cuda_array_interface__ (CuPy arrays, torch CUDA tensors,
    Numba device arrays): device memory;
  * objects exposing __dlpack__ / __dlpack_device__ (torch tensors, JAX arrays,
    CuPy arrays, NumPy >= 1.22): host or device memory.
A buffer must be contiguous (C order); its dtype must be one NCCL has.
"""

import ctypes

from . import _nccl as C

try:  # NumPy is optional for GPU-only use.
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

try:  # bfloat16 and fp8 on the host come from ml_dtypes.
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

# ---- dtypes ----------------------------------------------------------------

# Array-interface type strings (without byte order) -> NCCL type.
_TYPESTR = {
    "i1": C.ncclInt8,
    "u1": C.ncclUint8,
    "i4": C.ncclInt32,
    "u4": C.ncclUint32,
    "i8": C.ncclInt64,
    "u8": C.ncclUint64,
    "f2": C.ncclFloat16,
    "f4": C.ncclFloat32,
    "f8": C.ncclFloat64,
}

# Element size of each NCCL type, in bytes.
TYPE_SIZE = {
    C.ncclInt8: 1,
    C.ncclUint8: 1,
    C.ncclInt32: 4,
    C.ncclUint32: 4,
    C.ncclInt64: 8,
    C.ncclUint64: 8,
    C.ncclFloat16: 2,
    C.ncclFloat32: 4,
    C.ncclFloat64: 8,
    C.ncclBfloat16: 2,
    C.ncclFloat8e4m3: 1,
    C.ncclFloat8e5m2: 1,
}

TYPE_NAME = {
    C.ncclInt8: "int8",
    C.ncclUint8: "uint8",
    C.ncclInt32: "int32",
    C.ncclUint32: "uint32",
    C.ncclInt64: "int64",
    C.ncclUint64: "uint64",
    C.ncclFloat16: "float16",
    C.ncclFloat32: "float32",
    C.ncclFloat64: "float64",
    C.ncclBfloat16: "bfloat16",
    C.ncclFloat8e4m3: "float8_e4m3fn",
    C.ncclFloat8e5m2: "float8_e5m2",
}

# DLPack (type code, bits) -> NCCL type. Codes: 0 int, 1 uint, 2 float, 4 bfloat,
# 10 float8_e4m3fn, 12 float8_e5m2 (DLPack 1.1).
_DLPACK = {
    (0, 8): C.ncclInt8,
    (1, 8): C.ncclUint8,
    (0, 32): C.ncclInt32,
    (1, 32): C.ncclUint32,
    (0, 64): C.ncclInt64,
    (1, 64): C.ncclUint64,
    (2, 16): C.ncclFloat16,
    (2, 32): C.ncclFloat32,
    (2, 64): C.ncclFloat64,
    (4, 16): C.ncclBfloat16,
    (10, 8): C.ncclFloat8e4m3,
    (12, 8): C.ncclFloat8e5m2,
}


def _ml_dtypes_map():
    if np is None or ml_dtypes is None:
        return {}
    return {
        np.dtype(ml_dtypes.bfloat16): C.ncclBfloat16,
        np.dtype(ml_dtypes.float8_e4m3fn): C.ncclFloat8e4m3,
        np.dtype(ml_dtypes.float8_e5m2): C.ncclFloat8e5m2,
    }


_EXTRA_NUMPY = _ml_dtypes_map()


def numpy_dtypes():
    """Every NumPy dtype that maps to an NCCL type here, as np.dtype objects."""
    base = [np.dtype(n) for n in ("int8", "uint8", "int32", "uint32", "int64", "uint64")]
    base += [np.dtype(n) for n in ("float16", "float32", "float64")]
    return base + list(_EXTRA_NUMPY)


def nccl_dtype(dtype):
    """The NCCL type of a NumPy dtype, a torch/cupy dtype, a type name or an NCCL int."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype in TYPE_SIZE:
            return dtype
        raise ValueError(f"{dtype} is not an NCCL data type")
    if isinstance(dtype, str):
        name = dtype.lower()
        for code, n in TYPE_NAME.items():
            if n == name or (name == "float8_e4m3" and code == C.ncclFloat8e4m3):
                return code
    if np is not None:
        try:
            d = np.dtype(dtype)
        except TypeError:
            d = None
        if d is not None:
            if d in _EXTRA_NUMPY:
                return _EXTRA_NUMPY[d]
            t = _TYPESTR.get(d.str[1:])
            if t is not None and d.kind in "iuf":
                return t
            raise TypeError(f"NCCL has no data type for NumPy dtype {d}")
    name = str(dtype).rsplit(".", 1)[-1]  # torch.float32 -> float32
    for code, n in TYPE_NAME.items():
        if n == name:
            return code
    raise TypeError(f"NCCL has no data type for {dtype!r}")


# ---- buffers ---------------------------------------------------------------


class Buffer:
    """What the C call needs from a user buffer."""

    __slots__ = ("obj", "ptr", "count", "dtype", "device", "readonly", "_keep")

    def __init__(self, obj, ptr, count, dtype, device, readonly=False, keep=None):
        self.obj = obj
        self.ptr = ptr  # int address (0 allowed only for count 0)
        self.count = count  # elements
        self.dtype = dtype  # NCCL type
        self.device = device  # None: host memory; int: CUDA device ordinal
        self.readonly = readonly
        self._keep = keep  # a DLPack capsule to keep alive while the buffer is used

    @property
    def itemsize(self):
        return TYPE_SIZE[self.dtype]

    @property
    def nbytes(self):
        return self.count * self.itemsize

    def at(self, elements):
        """Address of element `elements`."""
        return self.ptr + elements * self.itemsize

    def __repr__(self):
        where = "host" if self.device is None else f"cuda:{self.device}"
        return f"<Buffer {TYPE_NAME[self.dtype]}[{self.count}] at {self.ptr:#x} on {where}>"


def _c_contiguous(shape, strides, itemsize):
    if strides is None:
        return True
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _prod(shape):
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _from_array_interface(obj, iface, device, name):
    typestr = iface["typestr"]
    if obj is not None and np is not None and isinstance(obj, np.ndarray):
        dtype = nccl_dtype(obj.dtype)
    else:
        code = _TYPESTR.get(typestr[1:])
        if code is None or typestr[0] == ">":
            raise TypeError(f"{name}: NCCL has no data type for array type '{typestr}'")
        dtype = code
    shape = tuple(iface["shape"])
    itemsize = TYPE_SIZE[dtype]
    if not _c_contiguous(shape, iface.get("strides"), itemsize):
        raise ValueError(f"{name} must be contiguous (C order); pass a contiguous copy")
    ptr, readonly = iface["data"]
    count = _prod(shape)
    return Buffer(obj, int(ptr or 0), count, dtype, device, bool(readonly))


# DLPack structs (DLPack 0.x DLManagedTensor; the DLTensor part is the same in 1.x).
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_kDLCPU, _kDLCUDA, _kDLCUDAHost, _kDLCUDAManaged = 1, 2, 3, 13

_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(obj, name, stream):
    dev_type, dev_id = obj.__dlpack_device__()
    kwargs = {}
    if dev_type == _kDLCUDA and stream is not None:
        handle = stream_handle(stream)
        kwargs["stream"] = handle if handle else 1  # 1 = the legacy default stream
    try:
        capsule = obj.__dlpack__(**kwargs)
    except (TypeError, BufferError):
        # No stream argument, or (torch) the buffer is not on the current device: the
        # collective is ordered on the stream given to NCCL, so export without one.
        capsule = obj.__dlpack__()
    ptr = _capsule_get_pointer(capsule, b"dltensor")
    if not ptr:
        raise TypeError(f"{name}: __dlpack__ returned no DLPack tensor")
    # DLManagedTensor starts with its DLTensor.
    t = _DLTensor.from_address(ptr)
    key = (t.dtype.code, t.dtype.bits)
    if t.dtype.lanes != 1 or key not in _DLPACK:
        raise TypeError(f"{name}: NCCL has no data type for DLPack type {key}")
    dtype = _DLPACK[key]
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None
    if t.strides:
        strides = tuple(t.strides[i] * TYPE_SIZE[dtype] for i in range(t.ndim))
    if not _c_contiguous(shape, strides, TYPE_SIZE[dtype]):
        raise ValueError(f"{name} must be contiguous (C order); pass a contiguous copy")
    if t.device.device_type == _kDLCUDA:
        device = int(t.device.device_id)
    elif t.device.device_type in (_kDLCPU, _kDLCUDAHost, _kDLCUDAManaged):
        device = None
    else:
        raise TypeError(f"{name}: DLPack device type {t.device.device_type} is not supported")
    addr = (t.data or 0) + t.byte_offset
    return Buffer(obj, addr, _prod(shape), dtype, device, False, keep=capsule)


def as_buffer(obj, name="buffer", stream=None):
    """A Buffer describing obj; raises TypeError/ValueError with a clear sentence."""
    if isinstance(obj, Buffer):
        return obj
    if obj is None:
        raise TypeError(f"{name} is None")
    if np is not None and isinstance(obj, np.ndarray):
        return _from_array_interface(obj, obj.__array_interface__, None, name)
    if _is_torch_tensor(obj):
        return _from_torch(obj, name)
    cai = None
    try:
        cai = getattr(obj, "__cuda_array_interface__", None)
    except (TypeError, AttributeError, RuntimeError):
        cai = None  # e.g. torch raises for bfloat16: use DLPack below
    if cai is not None:
        dev = _cuda_device_of(obj)
        try:
            return _from_array_interface(obj, cai, dev, name)
        except TypeError:
            # The array interface has no bfloat16/fp8 type strings (torch says '<V2'):
            # DLPack names them.
            if not hasattr(obj, "__dlpack__"):
                raise
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, name, stream)
    ai = getattr(obj, "__array_interface__", None)
    if ai is not None:
        return _from_array_interface(obj, ai, None, name)
    raise TypeError(
        f"{name} of type {type(obj).__name__} is not a buffer: pass a NumPy array, or an "
        "object with __cuda_array_interface__ or __dlpack__ (torch tensor, CuPy array)"
    )


def _is_torch_tensor(obj):
    t = type(obj)
    return t.__module__.startswith("torch") and hasattr(obj, "data_ptr") and hasattr(obj, "numel")


def _from_torch(obj, name):
    """torch tensors directly: their DLPack export insists on the current device being
    the tensor's, and their array interface has no bfloat16/fp8."""
    dtype = nccl_dtype(str(obj.dtype))
    if not obj.is_contiguous():
        raise ValueError(f"{name} must be contiguous (C order); pass a contiguous copy")
    dev = obj.device
    if dev.type == "cuda":
        device = int(dev.index if dev.index is not None else 0)
    elif dev.type == "cpu":
        device = None
    else:
        raise TypeError(f"{name} is on device '{dev}': only CUDA and CPU tensors are supported")
    return Buffer(obj, int(obj.data_ptr()), int(obj.numel()), dtype, device, False)


def _cuda_device_of(obj):
    dev = getattr(obj, "device", None)
    if dev is None:
        return 0
    idx = getattr(dev, "index", None)  # torch.device
    if idx is not None:
        return int(idx)
    idx = getattr(dev, "id", None)  # cupy.cuda.Device
    if idx is not None:
        return int(idx)
    try:
        return int(dev)
    except (TypeError, ValueError):
        pass
    if hasattr(obj, "__dlpack_device__"):
        return int(obj.__dlpack_device__()[1])
    return 0


def stream_handle(stream):
    """cudaStream_t as an int from None, an int, or a stream object."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    proto = getattr(stream, "__cuda_stream__", None)
    if proto is not None:
        value = proto() if callable(proto) else proto
        if isinstance(value, tuple):  # (version, handle)
            return int(value[1])
        return int(value)
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if value is not None:
            return int(value)
    try:
        return int(stream)
    except (TypeError, ValueError):
        raise TypeError(
            f"stream of type {type(stream).__name__} is not a CUDA stream: pass an int, or an "
            "object with __cuda_stream__, .cuda_stream or .ptr"
        ) from None
