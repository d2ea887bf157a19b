# SPDX-License-Identifier: BSD-3-Clause
"""Loads NCCL the way PyTorch 2.11 does, from a fake site directory laid out like PyTorch's
(tests/install/run copies this file into it, next to nvidia/nccl/lib/libnccl.so.2, a stand-in
for NVIDIA's library, and torch_like/lib/libconsumer.so, one for libtorch_cuda.so):

  1. torch/__init__.py: _load_global_deps() calls _preload_cuda_deps() once libcudart is
     mapped, which loads every CUDA wheel's library by its path, NCCL's among them:
     ctypes.CDLL(<site>/nvidia/nccl/lib/libnccl.so.2), RTLD_LOCAL;
  2. then `from torch._C import *` loads libtorch_cuda.so (RTLD_LOCAL), which needs
     libnccl.so.2 and has a run path to the nvidia wheel's directory.

Importing this module does both. Run as a program (with MONEL_LIB, Monel's library, as its
argument), it then calls ncclGetVersion and ncclAllReduce through the consumer and checks with
monel._binding that both calls are bound to Monel: it prints the report and
`binding: PASS` or `binding: FAIL`, and exits 0 or 1.
"""
import ctypes
import glob
import os
import sys

SITE = os.path.dirname(os.path.abspath(__file__))
NVIDIA = glob.glob(os.path.join(SITE, "nvidia", "nccl", "lib", "libnccl.so.*[0-9]"))[0]
ctypes.CDLL(NVIDIA)
consumer = ctypes.CDLL(os.path.join(SITE, "torch_like", "lib", "libconsumer.so"))


def main(monel_lib):
    version = consumer.consumer_version()
    result = consumer.consumer_allreduce()
    from monel import _binding

    ok, lines = _binding.check(monel_lib)
    print("\n".join(lines))
    mapped = _binding.mapped_files()
    print(f"consumer: ncclGetVersion gave {version}, ncclAllReduce(comm NULL) returned {result}")
    # Monel: NCCL 2.32.3's version code, and ncclInvalidArgument for a null communicator.
    ok = ok and version == 23203 and result == 4
    ok = ok and os.path.realpath(NVIDIA) in mapped  # the stand-in was mapped, as with PyTorch
    print(f"binding: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
