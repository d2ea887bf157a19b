# SPDX-License-Identifier: BSD-3-Clause
"""Command line of the monel package (also installed as the `monel` command):

    python -m monel run CMD [ARGS...]    run CMD with Monel's libnccl.so.2 preloaded, so that
                                         PyTorch, CuPy or any program using NCCL runs on Monel
    python -m monel info [--markdown]    what monel-info prints: version, build, engine, params
    python -m monel monelrun -n N CMD    N local ranks of CMD (monelrun), Monel preloaded
    python -m monel library              the path of the libnccl.so.2 that Monel would use
    python -m monel which [--import MOD]... [SYMBOL...]
                                         after importing each MOD (torch...), the libnccl files
                                         this process maps and the file each SYMBOL (default
                                         ncclGetVersion, ncclAllReduce) is bound to; status 0
                                         when all are Monel's: `monel run python -m monel which
                                         --import torch` shows what PyTorch will call

The library is the one `import monel` loads (MONEL_LIBRARY, else the one the package
carries, else a build beside the package, else the system's libnccl.so.2). It goes first in
LD_PRELOAD and in MONEL_LIBRARY, then the program replaces this process (exec), so its exit
status and signals are the program's own.

PyTorch's __init__ (2.x CUDA wheels) also loads the nvidia-nccl wheel's libnccl.so.2 by its path,
privately (RTLD_LOCAL): both files are then mapped, but the dynamic linker binds every library's
NCCL calls to the first definition in the global scope, the preloaded Monel. `which` shows those
bindings (monel._binding); nothing in PyTorch is changed.
"""

import os
import shutil
import sys

from . import _nccl

USAGE = "\n\n".join(__doc__.split("\n\n")[:2])


def _die(msg, status=2):
    sys.stderr.write(f"monel: {msg}\n")
    sys.exit(status)


def monel_library():
    """The resolved path of the Monel library to preload; exits when there is none."""
    try:
        _nccl.load()
    except OSError as e:
        _die(f"{e}", 1)
    if not _nccl.is_monel():
        _die(f"{_nccl.library_path()} is not Monel: install the monel wheel, build Monel, or set "
             "MONEL_LIBRARY to Monel's libnccl.so.2", 1)
    return _nccl.library_path()


def _tool(name):
    """A program the package carries (monel/bin), else one of a build beside it, else PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    for path in (
        os.path.join(here, "bin", name),
        os.path.join(os.path.dirname(os.path.dirname(here)), "build", "bin", name),
    ):
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if not found:
        _die(f"{name} is neither in this package nor on PATH", 1)
    return found


def exec_preloaded(argv):
    """Replace this process with argv, Monel's library first in LD_PRELOAD."""
    lib = monel_library()
    env = dict(os.environ)
    others = [p for p in env.get("LD_PRELOAD", "").replace(":", " ").split() if p != lib]
    env["LD_PRELOAD"] = " ".join([lib] + others)
    env["MONEL_LIBRARY"] = lib
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        _die(f"cannot run {argv[0]}: {e.strerror}", 127)


def which(args):
    """The `which` command: imports, then reports the bindings (monel._binding)."""
    import importlib

    from . import _binding

    symbols = []
    while args:
        arg = args.pop(0)
        if arg == "--import" and args:
            importlib.import_module(args.pop(0))
        elif arg.startswith("--import="):
            importlib.import_module(arg.split("=", 1)[1])
        else:
            symbols.append(arg)
    # Found, not loaded: loading Monel here would add it to the global scope being looked at.
    lib = _nccl.find_library()
    if "/" not in lib:
        _die("no Monel library: install the monel wheel, build Monel, or set MONEL_LIBRARY", 1)
    ok, lines = _binding.check(lib, tuple(symbols) or ("ncclGetVersion", "ncclAllReduce"),
                               need_importer=False)
    print("\n".join(lines))
    return 0 if ok else 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        sys.stderr.write(USAGE + "\n")
        return 2
    if argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "run":
        if rest[:1] == ["--"]:
            rest = rest[1:]
        if not rest:
            _die("run: give the command to run: python -m monel run CMD [ARGS...]")
        exec_preloaded(rest)
    elif cmd == "info":
        exec_preloaded([_tool("monel-info")] + rest)
    elif cmd == "monelrun":
        exec_preloaded([_tool("monelrun")] + rest)
    elif cmd == "which":
        return which(list(rest))
    elif cmd == "library":
        print(monel_library())
        return 0
    _die(f"unknown command '{cmd}'\n{USAGE}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
