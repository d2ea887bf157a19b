# SPDX-License-Identifier: BSD-3-Clause
"""Which library this process's NCCL symbols are bound to (Linux, 64-bit ELF).

A process may map more than one libnccl.so.2: `python -m monel run` preloads Monel's, and
PyTorch's __init__ loads the nvidia-nccl wheel's by its path as well (ctypes, RTLD_LOCAL). The
dynamic linker binds a library's reference to ncclAllReduce to the first definition in the
process's global scope (the program, then LD_PRELOAD, then what they need), so the preloaded
library wins; this module shows it, from inside the process, in two ways:

  * the global lookup: the address dlsym finds for the name in the global scope (what any
    library's reference will be bound to), and the file that defines it (dladdr);
  * every importer: for each loaded object that imports the name (an undefined symbol in its
    .dynsym), the address the dynamic linker wrote in its GOT slot (a GLOB_DAT, JUMP_SLOT or
    absolute relocation of that symbol) and the file that defines that address. A JUMP_SLOT of
    a lazily bound library still points into the importer's own PLT until its first call: it
    is reported as not bound yet.

Nothing here loads a library: importing this module leaves the process's scopes unchanged (it
is the Monel library's loader, monel._nccl, that puts Monel in the global scope).
"""

import ctypes
import os
import struct
from ctypes import POINTER, Structure, c_char_p, c_int, c_size_t, c_uint16, c_uint64, c_void_p

# Relocations that put a symbol's address in a 64-bit slot, by ELF machine: (type, adds addend).
_SLOT_RELOCS = {
    62: {1: True, 6: False, 7: False},  # x86-64: R_X86_64_64, GLOB_DAT, JUMP_SLOT
    183: {257: True, 1025: True, 1026: True},  # AArch64: ABS64, GLOB_DAT, JUMP_SLOT
}
_SHT_RELA, _SHT_DYNSYM = 4, 11


class _DlInfo(Structure):
    _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p),
                ("dli_sname", c_char_p), ("dli_saddr", c_void_p)]


class _PhdrInfo(Structure):
    _fields_ = [("dlpi_addr", c_uint64), ("dlpi_name", c_char_p),
                ("dlpi_phdr", c_void_p), ("dlpi_phnum", c_uint16)]


_PHDR_CALLBACK = ctypes.CFUNCTYPE(c_int, POINTER(_PhdrInfo), c_size_t, c_void_p)
_global = ctypes.CDLL(None)  # dlopen(NULL): lookups in it search the global scope
_dladdr = _global.dladdr
_dladdr.argtypes = [c_void_p, POINTER(_DlInfo)]
_dladdr.restype = c_int
# Called without releasing the GIL: the callback runs under the loader's lock, and no other
# Python thread may then wait for that lock while holding the GIL.
_dl_iterate_phdr = ctypes.PyDLL(None).dl_iterate_phdr
_dl_iterate_phdr.argtypes = [_PHDR_CALLBACK, c_void_p]
_dl_iterate_phdr.restype = c_int


def defining_file(addr):
    """The real path of the loaded file that holds addr, or None."""
    info = _DlInfo()
    if not addr or not _dladdr(addr, ctypes.byref(info)):
        return None
    name = (info.dli_fname or b"").decode(errors="replace")
    if not os.path.isfile(name):  # the program itself may be named by argv[0] or ""
        name = "/proc/self/exe"
    return os.path.realpath(name)


def loaded_objects():
    """(real path, load bias) of every object the dynamic linker has loaded, in its order."""
    found = []

    def visit(info, _size, _data):
        name = (info.contents.dlpi_name or b"").decode(errors="replace")
        found.append((name, info.contents.dlpi_addr))
        return 0

    _dl_iterate_phdr(_PHDR_CALLBACK(visit), None)
    out = []
    for name, bias in found:
        if not name:
            name = "/proc/self/exe"
        if os.path.isfile(name):
            out.append((os.path.realpath(name), bias))
    return out


def global_lookup(symbol):
    """The address of symbol in the global scope (None when no loaded library defines it)."""
    try:
        return ctypes.cast(getattr(_global, symbol), c_void_p).value
    except AttributeError:
        return None


def _sections(f):
    f.seek(0)
    ident = f.read(64)
    if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        return None, []  # not a little-endian 64-bit ELF file
    machine = struct.unpack_from("<H", ident, 18)[0]
    shoff, = struct.unpack_from("<Q", ident, 40)
    shentsize, shnum = struct.unpack_from("<HH", ident, 58)
    f.seek(shoff)
    table = f.read(shentsize * shnum)
    secs = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
    return machine, secs


def _read(f, sec):
    f.seek(sec[4])
    return f.read(sec[5])


def slot_offsets(path, symbols):
    """{symbol: [(offset of a GOT slot, addend or None)]} of the relocations by which the file
    at path imports each of symbols (an undefined .dynsym entry); symbols it does not import
    are left out."""
    names = {s.encode() + b"\0": s for s in symbols}
    out = {}
    with open(path, "rb") as f:
        machine, secs = _sections(f)
        relocs = _SLOT_RELOCS.get(machine)
        if not relocs:
            return out
        for di, dynsym in enumerate(secs):
            if dynsym[1] != _SHT_DYNSYM or dynsym[6] >= len(secs):
                continue
            strtab = _read(f, secs[dynsym[6]])
            if not any(name in strtab for name in names):
                continue
            wanted = {}  # .dynsym index -> symbol
            for i, (st_name, _info, _other, shndx, _v, _s) in enumerate(
                    struct.iter_unpack("<IBBHQQ", _read(f, dynsym))):
                if shndx == 0:  # undefined: imported
                    end = strtab.find(b"\0", st_name)
                    symbol = names.get(strtab[st_name:end + 1])
                    if symbol:
                        wanted[i] = symbol
            for rel in secs:
                if not wanted or rel[1] != _SHT_RELA or rel[6] != di:
                    continue
                for r_offset, r_info, addend in struct.iter_unpack("<QQq", _read(f, rel)):
                    kind = r_info & 0xFFFFFFFF
                    if r_info >> 32 in wanted and kind in relocs:
                        out.setdefault(wanted[r_info >> 32], []).append(
                            (r_offset, addend if relocs[kind] else None))
    return out


def importers(symbols):
    """{symbol: [(importer's real path, real path of the file its slot points into, or None
    while a lazy slot is not bound yet)]} for every loaded object that imports a symbol."""
    out = {s: [] for s in symbols}
    for path, bias in loaded_objects():
        try:
            slots = slot_offsets(path, symbols)
        except OSError:
            continue
        for symbol, offsets in slots.items():
            for offset, addend in offsets:
                value = c_uint64.from_address(bias + offset).value - (addend or 0)
                bound = defining_file(value)
                out[symbol].append((path, None if bound in (None, path) else bound))
    return out


def mapped_files(part="libnccl.so"):
    """Real paths of the files whose name contains part, mapped in this process (maps order)."""
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and part in os.path.basename(fields[5].strip()):
                path = os.path.realpath(fields[5].strip())
                if path not in seen:
                    seen.append(path)
    return seen


def monel_version_of(path):
    """Monel's version string if the already loaded library at path is Monel, else None.
    Loads nothing (RTLD_NOLOAD); asks only a library that defines ncclMonelGetVersionString."""
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
        fn = lib.ncclMonelGetVersionString
    except (OSError, AttributeError):
        return None
    if defining_file(ctypes.cast(fn, c_void_p).value) != os.path.realpath(path):
        return None  # found in a library it needs, not in it
    fn.argtypes = [POINTER(c_char_p)]
    fn.restype = c_int
    s = c_char_p()
    return s.value.decode() if fn(ctypes.byref(s)) == 0 and s.value else None


def check(library, symbols=("ncclGetVersion", "ncclAllReduce"), need_importer=True):
    """Whether every binding of symbols in this process is to library: the global lookup and
    every importer's bound slot; with need_importer, each symbol also needs at least one bound
    importer (an object that called it, or was bound at load). Returns (ok, report lines)."""
    want = os.path.realpath(library)
    ok = True
    lines = []
    for path in mapped_files():
        version = monel_version_of(path)
        lines.append(f"mapped {path} ({version or 'not Monel'})")
    users = importers(symbols)
    for symbol in symbols:
        where = defining_file(global_lookup(symbol))
        ok = ok and where == want
        lines.append(f"{symbol}: global lookup -> {where or 'not defined'}")
        bound = 0
        for user, target in users[symbol]:
            if target is None:
                lines.append(f"{symbol}: {user} -> not bound yet (lazy binding)")
                continue
            bound += 1
            ok = ok and target == want
            lines.append(f"{symbol}: {user} -> {target}")
        if need_importer and not bound:
            ok = False
            lines.append(f"{symbol}: no loaded object has a bound reference to it")
    verdict = "all bound to" if ok else "NOT all bound to"
    lines.append(f"{verdict} {want}")
    return ok, lines
