# SPDX-License-Identifier: BSD-3-Clause
"""One-to-one ctypes bindings of Monel's C API (nccl.h and monel.h).

Every C function keeps its name and its argument order; enums are module-level
integer constants with NCCL's names, structs are ctypes Structures with NCCL's
field names and layout. Nothing here raises on a non-success result: the
functions return the ncclResult_t integer exactly as the C library does. The
Pythonic layer (monel.core) builds on this module.

The shared library is located by find_library():
  1. the file named by the MONEL_LIBRARY environment variable;
  2. the library the package carries: monel/lib/libnccl.so.2 (the wheel);
  3. the build beside the package: <repository>/build/lib/libnccl.so.2 (when the
     package is run from the source tree or installed with ``pip install -e``);
  4. the system's libnccl.so.2 (found through the dynamic loader).
"""

import ctypes
import os
import warnings
from ctypes import (
    POINTER,
    Structure,
    c_bool,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_uint,
    c_uint8,
    c_uint32,
    c_uint64,
    c_void_p,
)

# ---- Version ---------------------------------------------------------------

NCCL_MAJOR = 2
NCCL_MINOR = 28
NCCL_PATCH = 9
NCCL_SUFFIX = ""


def NCCL_VERSION(x, y, z):
    """NCCL's version code: four digits up to 2.8, five digits after."""
    if x <= 2 and y <= 8:
        return x * 1000 + y * 100 + z
    return x * 10000 + y * 100 + z


NCCL_VERSION_CODE = NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

MONEL_VERSION_MAJOR = 0
MONEL_VERSION_MINOR = 1
MONEL_VERSION_PATCH = 0
MONEL_VERSION_CODE = MONEL_VERSION_MAJOR * 10000 + MONEL_VERSION_MINOR * 100 + MONEL_VERSION_PATCH

# ---- ncclResult_t ----------------------------------------------------------

ncclResult_t = c_int
ncclSuccess = 0
ncclUnhandledCudaError = 1
ncclSystemError = 2
ncclInternalError = 3
ncclInvalidArgument = 4
ncclInvalidUsage = 5
ncclRemoteError = 6
ncclInProgress = 7
ncclNumResults = 8

RESULT_NAMES = {
    ncclSuccess: "ncclSuccess",
    ncclUnhandledCudaError: "ncclUnhandledCudaError",
    ncclSystemError: "ncclSystemError",
    ncclInternalError: "ncclInternalError",
    ncclInvalidArgument: "ncclInvalidArgument",
    ncclInvalidUsage: "ncclInvalidUsage",
    ncclRemoteError: "ncclRemoteError",
    ncclInProgress: "ncclInProgress",
}

# ---- Constants -------------------------------------------------------------

NCCL_CONFIG_UNDEF_INT = -(2**31)  # INT_MIN
NCCL_CONFIG_UNDEF_PTR = None
NCCL_SPLIT_NOCOLOR = -1
NCCL_UNDEF_FLOAT = -1.0
NCCL_WIN_DEFAULT = 0x00
NCCL_WIN_COLL_SYMMETRIC = 0x01
NCCL_WIN_REQUIRED_ALIGNMENT = 4096
NCCL_CTA_POLICY_DEFAULT = 0x00
NCCL_CTA_POLICY_EFFICIENCY = 0x01
NCCL_CTA_POLICY_ZERO = 0x02
NCCL_SHRINK_DEFAULT = 0x00
NCCL_SHRINK_ABORT = 0x01
NCCL_REVOKE_DEFAULT = 0x00
NCCL_UNIQUE_ID_BYTES = 128
NCCL_CONFIG_MAGIC = 0xCAFEBEEF
NCCL_SIM_INFO_MAGIC = 0x74685283

# ---- ncclRedOp_t -----------------------------------------------------------

ncclRedOp_t = c_int
ncclSum = 0
ncclProd = 1
ncclMax = 2
ncclMin = 3
ncclAvg = 4
ncclNumOps = 5
ncclMaxRedOp = 0x7FFFFFFF

# ---- ncclDataType_t --------------------------------------------------------

ncclDataType_t = c_int
ncclInt8 = ncclChar = 0
ncclUint8 = 1
ncclInt32 = ncclInt = 2
ncclUint32 = 3
ncclInt64 = 4
ncclUint64 = 5
ncclFloat16 = ncclHalf = 6
ncclFloat32 = ncclFloat = 7
ncclFloat64 = ncclDouble = 8
ncclBfloat16 = 9
ncclFloat8e4m3 = 10
ncclFloat8e5m2 = 11
ncclNumTypes = 12

# ---- ncclScalarResidence_t -------------------------------------------------

ncclScalarResidence_t = c_int
ncclScalarDevice = 0
ncclScalarHostImmediate = 1

# ---- Handles and structs ---------------------------------------------------

ncclComm_t = c_void_p
ncclWindow_t = c_void_p
cudaStream_t = c_void_p


class ncclUniqueId(Structure):
    """The 128 opaque bytes every rank of a new communicator shares."""

    _fields_ = [("internal", c_char * NCCL_UNIQUE_ID_BYTES)]


class ncclConfig_t(Structure):
    """ncclConfig_v22800 (80 bytes on LP64). A new instance holds the values of
    NCCL_CONFIG_INITIALIZER."""

    _fields_ = [
        ("size", c_size_t),
        ("magic", c_uint),
        ("version", c_uint),
        ("blocking", c_int),
        ("cgaClusterSize", c_int),
        ("minCTAs", c_int),
        ("maxCTAs", c_int),
        ("netName", c_char_p),
        ("splitShare", c_int),
        ("trafficClass", c_int),
        ("commName", c_char_p),
        ("collnetEnable", c_int),
        ("CTAPolicy", c_int),
        ("shrinkShare", c_int),
        ("nvlsCTAs", c_int),
        ("nChannelsPerNetPeer", c_int),
        ("nvlinkCentricSched", c_int),
    ]

    def __init__(self, **fields):
        super().__init__()
        self.size = ctypes.sizeof(ncclConfig_t)
        self.magic = NCCL_CONFIG_MAGIC
        self.version = NCCL_VERSION_CODE
        for name, _ in self._fields_[3:]:
            if name not in ("netName", "commName"):
                setattr(self, name, NCCL_CONFIG_UNDEF_INT)
        for name, value in fields.items():
            setattr(self, name, value)


def NCCL_CONFIG_INITIALIZER():
    """A fresh ncclConfig_t holding NCCL_CONFIG_INITIALIZER's values."""
    return ncclConfig_t()


class ncclSimInfo_t(Structure):
    """ncclSimInfo_v22200 (24 bytes). A new instance holds NCCL_SIM_INFO_INITIALIZER."""

    _fields_ = [
        ("size", c_size_t),
        ("magic", c_uint),
        ("version", c_uint),
        ("estimatedTime", c_float),
    ]

    def __init__(self):
        super().__init__()
        self.size = ctypes.sizeof(ncclSimInfo_t)
        self.magic = NCCL_SIM_INFO_MAGIC
        self.version = NCCL_VERSION_CODE
        self.estimatedTime = NCCL_UNDEF_FLOAT


def NCCL_SIM_INFO_INITIALIZER():
    return ncclSimInfo_t()


# Host side of the 2.28 device API.
ncclDevResourceHandle_t = c_uint32
ncclGinSignal_t = c_uint32
ncclGinCounter_t = c_uint32


class ncclTeam_t(Structure):
    _fields_ = [("nRanks", c_int), ("rank", c_int), ("stride", c_int)]


class ncclWindow_vidmem(Structure):
    _fields_ = [
        ("winHost", c_void_p),
        ("lsaFlatBase", c_void_p),
        ("lsaRank", c_int),
        ("worldRank", c_int),
        ("stride4G", c_uint32),
        ("mcOffset4K", c_uint32),
        ("ginOffset4K", c_uint32),
        ("ginWins", c_void_p * 4),
    ]


class ncclMultimemHandle_t(Structure):
    _fields_ = [("mcBasePtr", c_void_p)]


class ncclLsaBarrierHandle_t(Structure):
    _fields_ = [("bufHandle", ncclDevResourceHandle_t), ("nBarriers", c_int)]


class ncclGinBarrierHandle_t(Structure):
    _fields_ = [("signal0", ncclGinSignal_t), ("bufHandle", ncclDevResourceHandle_t)]


class ncclLLA2AHandle_t(Structure):
    _fields_ = [("bufHandle", ncclDevResourceHandle_t), ("nSlots", c_uint32)]


class ncclDevComm_t(Structure):
    _fields_ = [
        ("rank", c_int),
        ("nRanks", c_int),
        ("nRanks_rcp32", c_uint32),
        ("lsaRank", c_int),
        ("lsaSize", c_int),
        ("lsaSize_rcp32", c_uint32),
        ("windowTable", c_void_p),
        ("resourceWindow", ncclWindow_t),
        ("resourceWindow_inlined", ncclWindow_vidmem),
        ("lsaMultimem", ncclMultimemHandle_t),
        ("lsaBarrier", ncclLsaBarrierHandle_t),
        ("railGinBarrier", ncclGinBarrierHandle_t),
        ("ginContextCount", c_uint8),
        ("ginTypes", c_uint8 * 4),
        ("ginHandles", c_void_p * 4),
        ("ginSignalBase", c_uint32),
        ("ginSignalCount", c_int),
        ("ginCounterBase", c_uint32),
        ("ginCounterCount", c_int),
        ("ginSignalShadows", POINTER(c_uint64)),
    ]


class ncclDevResourceRequirements_t(Structure):
    pass


ncclDevResourceRequirements_t._fields_ = [
    ("next", POINTER(ncclDevResourceRequirements_t)),
    ("bufferSize", c_size_t),
    ("bufferAlign", c_size_t),
    ("outBufferHandle", POINTER(ncclDevResourceHandle_t)),
    ("ginSignalCount", c_int),
    ("ginCounterCount", c_int),
    ("outGinSignalStart", POINTER(ncclGinSignal_t)),
    ("outGinCounterStart", POINTER(ncclGinCounter_t)),
]


class ncclTeamRequirements_t(Structure):
    pass


ncclTeamRequirements_t._fields_ = [
    ("next", POINTER(ncclTeamRequirements_t)),
    ("team", ncclTeam_t),
    ("multimem", c_bool),
    ("outMultimemHandle", POINTER(ncclMultimemHandle_t)),
]


class ncclDevCommRequirements_t(Structure):
    _fields_ = [
        ("resourceRequirementsList", POINTER(ncclDevResourceRequirements_t)),
        ("teamRequirementsList", POINTER(ncclTeamRequirements_t)),
        ("lsaMultimem", c_bool),
        ("barrierCount", c_int),
        ("lsaBarrierCount", c_int),
        ("railGinBarrierCount", c_int),
        ("lsaLLA2ABlockCount", c_int),
        ("lsaLLA2ASlotCount", c_int),
        ("ginForceEnable", c_bool),
        ("ginContextCount", c_int),
        ("ginSignalCount", c_int),
        ("ginCounterCount", c_int),
    ]


# ---- Function table --------------------------------------------------------

_P = POINTER
_R = ncclResult_t

# name -> (restype, argtypes); each function of nccl.h and monel.h once.
FUNCTIONS = {
    # Memory
    "ncclMemAlloc": (_R, [_P(c_void_p), c_size_t]),
    "ncclMemFree": (_R, [c_void_p]),
    # Version, unique id
    "ncclGetVersion": (_R, [_P(c_int)]),
    "ncclGetUniqueId": (_R, [_P(ncclUniqueId)]),
    # Communicators
    "ncclCommInitRankConfig": (_R, [_P(ncclComm_t), c_int, ncclUniqueId, c_int, _P(ncclConfig_t)]),
    "ncclCommInitRank": (_R, [_P(ncclComm_t), c_int, ncclUniqueId, c_int]),
    "ncclCommInitAll": (_R, [_P(ncclComm_t), c_int, _P(c_int)]),
    "ncclCommInitRankScalable": (
        _R,
        [_P(ncclComm_t), c_int, c_int, c_int, _P(ncclUniqueId), _P(ncclConfig_t)],
    ),
    "ncclCommFinalize": (_R, [ncclComm_t]),
    "ncclCommDestroy": (_R, [ncclComm_t]),
    "ncclCommAbort": (_R, [ncclComm_t]),
    "ncclCommRevoke": (_R, [ncclComm_t, c_int]),
    "ncclCommSplit": (_R, [ncclComm_t, c_int, c_int, _P(ncclComm_t), _P(ncclConfig_t)]),
    "ncclCommShrink": (
        _R,
        [ncclComm_t, _P(c_int), c_int, _P(ncclComm_t), _P(ncclConfig_t), c_int],
    ),
    # Errors
    "ncclGetErrorString": (c_char_p, [ncclResult_t]),
    "ncclGetLastError": (c_char_p, [ncclComm_t]),
    "ncclResetDebugInit": (None, []),
    "ncclCommGetAsyncError": (_R, [ncclComm_t, _P(ncclResult_t)]),
    # Queries
    "ncclCommCount": (_R, [ncclComm_t, _P(c_int)]),
    "ncclCommCuDevice": (_R, [ncclComm_t, _P(c_int)]),
    "ncclCommUserRank": (_R, [ncclComm_t, _P(c_int)]),
    # Registration
    "ncclCommRegister": (_R, [ncclComm_t, c_void_p, c_size_t, _P(c_void_p)]),
    "ncclCommDeregister": (_R, [ncclComm_t, c_void_p]),
    "ncclCommWindowRegister": (_R, [ncclComm_t, c_void_p, c_size_t, _P(ncclWindow_t), c_int]),
    "ncclCommWindowDeregister": (_R, [ncclComm_t, ncclWindow_t]),
    # Reduction operators
    "ncclRedOpCreatePreMulSum": (
        _R,
        [_P(ncclRedOp_t), c_void_p, ncclDataType_t, ncclScalarResidence_t, ncclComm_t],
    ),
    "ncclRedOpDestroy": (_R, [ncclRedOp_t, ncclComm_t]),
    # Collectives
    "ncclReduce": (
        _R,
        [c_void_p, c_void_p, c_size_t, ncclDataType_t, ncclRedOp_t, c_int, ncclComm_t, cudaStream_t],
    ),
    "ncclBcast": (_R, [c_void_p, c_size_t, ncclDataType_t, c_int, ncclComm_t, cudaStream_t]),
    "ncclBroadcast": (
        _R,
        [c_void_p, c_void_p, c_size_t, ncclDataType_t, c_int, ncclComm_t, cudaStream_t],
    ),
    "ncclAllReduce": (
        _R,
        [c_void_p, c_void_p, c_size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t],
    ),
    "ncclReduceScatter": (
        _R,
        [c_void_p, c_void_p, c_size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t],
    ),
    "ncclAllGather": (_R, [c_void_p, c_void_p, c_size_t, ncclDataType_t, ncclComm_t, cudaStream_t]),
    "ncclAlltoAll": (_R, [c_void_p, c_void_p, c_size_t, ncclDataType_t, ncclComm_t, cudaStream_t]),
    "ncclGather": (
        _R,
        [c_void_p, c_void_p, c_size_t, ncclDataType_t, c_int, ncclComm_t, cudaStream_t],
    ),
    "ncclScatter": (
        _R,
        [c_void_p, c_void_p, c_size_t, ncclDataType_t, c_int, ncclComm_t, cudaStream_t],
    ),
    # Point to point
    "ncclSend": (_R, [c_void_p, c_size_t, ncclDataType_t, c_int, ncclComm_t, cudaStream_t]),
    "ncclRecv": (_R, [c_void_p, c_size_t, ncclDataType_t, c_int, ncclComm_t, cudaStream_t]),
    # Groups
    "ncclGroupStart": (_R, []),
    "ncclGroupEnd": (_R, []),
    "ncclGroupSimulateEnd": (_R, [_P(ncclSimInfo_t)]),
    # Host side of the device API
    "ncclDevCommCreate": (
        _R,
        [ncclComm_t, _P(ncclDevCommRequirements_t), _P(ncclDevComm_t)],
    ),
    "ncclDevCommDestroy": (_R, [ncclComm_t, _P(ncclDevComm_t)]),
    "ncclTeamWorld": (ncclTeam_t, [ncclComm_t]),
    "ncclTeamLsa": (ncclTeam_t, [ncclComm_t]),
    "ncclTeamRail": (ncclTeam_t, [ncclComm_t]),
    "ncclTeamRankToWorld": (c_int, [ncclComm_t, ncclTeam_t, c_int]),
    "ncclTeamRankToLsa": (c_int, [ncclComm_t, ncclTeam_t, c_int]),
    "ncclLsaBarrierCreateRequirement": (
        _R,
        [ncclTeam_t, c_int, _P(ncclLsaBarrierHandle_t), _P(ncclDevResourceRequirements_t)],
    ),
    "ncclGinBarrierCreateRequirement": (
        _R,
        [
            ncclComm_t,
            ncclTeam_t,
            c_int,
            _P(ncclGinBarrierHandle_t),
            _P(ncclDevResourceRequirements_t),
        ],
    ),
    "ncclLLA2ACalcSlots": (c_int, [c_int, c_int]),
    "ncclLLA2ACreateRequirement": (
        _R,
        [c_int, c_int, _P(ncclLLA2AHandle_t), _P(ncclDevResourceRequirements_t)],
    ),
    # monel.h
    "ncclAlltoAllv": (
        _R,
        [
            c_void_p,
            _P(c_size_t),
            _P(c_size_t),
            c_void_p,
            _P(c_size_t),
            _P(c_size_t),
            c_void_p,
            c_size_t,
            ncclDataType_t,
            ncclComm_t,
            cudaStream_t,
        ],
    ),
    "ncclMonelGetVersionString": (_R, [_P(c_char_p)]),
    "ncclMonelCommGetEngine": (_R, [ncclComm_t, _P(c_char_p)]),
    "ncclMonelTopoInfo": (_R, [c_char_p, c_size_t]),
}

# Functions that only Monel has; the others may be missing from an old NCCL too.
MONEL_ONLY = (
    "ncclAlltoAllv",
    "ncclMonelGetVersionString",
    "ncclMonelCommGetEngine",
    "ncclMonelTopoInfo",
)

# ---- Loading ---------------------------------------------------------------

_lib = None
_lib_path = None
_is_monel = False


def _repo_build_library():
    """<repository>/build/lib/libnccl.so.2 when this package sits in a source tree."""
    here = os.path.dirname(os.path.abspath(__file__))  # <repo>/python/monel
    repo = os.path.dirname(os.path.dirname(here))
    return os.path.join(repo, "build", "lib", "libnccl.so.2")


def packaged_library():
    """monel/lib/libnccl.so.2 when the package carries the library (the wheel), else None."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libnccl.so.2")
    return path if os.path.exists(path) else None


def find_library():
    """The path (or soname) of the library to load, by the order in the module doc."""
    env = os.environ.get("MONEL_LIBRARY")
    if env:
        return env
    packaged = packaged_library()
    if packaged:
        return packaged
    local = _repo_build_library()
    if os.path.exists(local):
        return local
    return "libnccl.so.2"


def _resolved_path(lib, fallback):
    """The file the dynamic loader actually mapped for lib (Linux: dladdr)."""
    try:
        libdl = ctypes.CDLL(None)

        class Dl_info(Structure):
            _fields_ = [
                ("dli_fname", c_char_p),
                ("dli_fbase", c_void_p),
                ("dli_sname", c_char_p),
                ("dli_saddr", c_void_p),
            ]

        dladdr = libdl.dladdr
        dladdr.argtypes = [c_void_p, _P(Dl_info)]
        dladdr.restype = c_int
        info = Dl_info()
        addr = ctypes.cast(lib.ncclGetVersion, c_void_p)
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (OSError, AttributeError):
        pass
    return fallback


def load(path=None):
    """Load the library (once) and bind every function. Returns the CDLL."""
    global _lib, _lib_path, _is_monel
    if _lib is not None and path is None:
        return _lib
    path = path or find_library()
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise OSError(
            f"cannot load the NCCL library '{path}': {e}. Build Monel (cmake --build build) "
            "or set MONEL_LIBRARY to the path of its libnccl.so.2"
        ) from e
    for name, (restype, argtypes) in FUNCTIONS.items():
        fn = getattr(lib, name, None)
        if fn is None:
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    _lib_path = _resolved_path(lib, path)
    _is_monel = hasattr(lib, "ncclMonelGetVersionString")
    if _is_monel:
        s = c_char_p()
        _is_monel = (
            lib.ncclMonelGetVersionString(ctypes.byref(s)) == ncclSuccess
            and s.value is not None
            and s.value.startswith(b"Monel")
        )
    if not _is_monel:
        warnings.warn(
            f"{_lib_path} is not Monel (it has no working ncclMonelGetVersionString); "
            "Monel-only calls (alltoallv, engine) are unavailable",
            RuntimeWarning,
            stacklevel=2,
        )
    _bind_module_functions(lib)
    return lib


def library_path():
    """The file of the loaded library."""
    load()
    return _lib_path


def is_monel():
    load()
    return _is_monel


def _missing(name):
    def fn(*args):
        raise NotImplementedError(f"{name} is not exported by {_lib_path}")

    fn.__name__ = name
    return fn


def _bind_module_functions(lib):
    g = globals()
    for name in FUNCTIONS:
        fn = getattr(lib, name, None)
        g[name] = fn if fn is not None else _missing(name)


class _Lazy:
    """Placeholder bound before the library loads: the first call loads it."""

    def __init__(self, name):
        self.__name__ = name

    def __call__(self, *args):
        load()
        return globals()[self.__name__](*args)


for _name in FUNCTIONS:
    globals()[_name] = _Lazy(_name)
del _name

__all__ = [n for n in list(globals()) if n.startswith(("nccl", "NCCL", "MONEL"))] + [
    "FUNCTIONS",
    "load",
    "find_library",
    "library_path",
    "is_monel",
]
