# SPDX-License-Identifier: BSD-3-Clause
"""Errors and library facts of the Pythonic layer: MonelError, the version, the loaded library."""

import ctypes

from . import _nccl as C

# ---- errors ----------------------------------------------------------------


class MonelError(RuntimeError):
    """A call into the library failed. .result is the ncclResult_t code,
    .message the library's ncclGetLastError text (may be empty)."""

    def __init__(self, result, function, message=""):
        self.result = int(result)
        self.function = function
        self.message = message or ""
        name = C.RESULT_NAMES.get(self.result, f"result {self.result}")
        text = f"{function} failed: {name}"
        try:
            s = C.ncclGetErrorString(self.result)
            if s:
                text += f" ({s.decode(errors='replace')})"
        except (AttributeError, NotImplementedError):
            pass
        if self.message:
            text += f": {self.message}"
        super().__init__(text)


def _last_error(comm_ptr=None):
    try:
        s = C.ncclGetLastError(comm_ptr)
    except NotImplementedError:
        return ""
    return s.decode(errors="replace") if s else ""


def _check(result, function, comm_ptr=None):
    if result != C.ncclSuccess and result != C.ncclInProgress:
        raise MonelError(result, function, _last_error(comm_ptr))
    return result


# ---- library facts ---------------------------------------------------------


def library_path():
    """The file of the loaded libnccl.so.2."""
    return C.library_path()


def get_version():
    """NCCL version code of the loaded library (23203 for 2.32.3)."""
    v = ctypes.c_int()
    _check(C.ncclGetVersion(ctypes.byref(v)), "ncclGetVersion")
    return v.value


def monel_version():
    """Monel's own version string, or None when the library is not Monel."""
    if not C.is_monel():
        return None
    s = ctypes.c_char_p()
    _check(C.ncclMonelGetVersionString(ctypes.byref(s)), "ncclMonelGetVersionString")
    return s.value.decode()


def error_string(result):
    s = C.ncclGetErrorString(int(result))
    return s.decode() if s else ""


# ---- reduction ops ---------------------------------------------------------
