"""An all_reduce through torch.distributed's NCCL backend, run under `python -m monel run
torchrun ...` (tests/torch/run-wheel): each rank prints the libnccl.so.2 its process mapped (from
/proc/self/maps), the version string that library gives, and whether the result is exact.
Two ranks may share one GPU (Monel allows it). Exits non-zero when a value is wrong or the
library is not the monel wheel's."""
import ctypes
import os
import sys

import torch
import torch.distributed as dist


def loaded_nccl():
    for line in open("/proc/self/maps"):
        if "libnccl.so" in line:
            return line.split()[-1]
    return "(none)"


def monel_version():
    lib = ctypes.CDLL("libnccl.so.2")  # the library already loaded (preloaded), by soname
    fn = getattr(lib, "ncclMonelGetVersionString", None)
    if fn is None:
        return "not Monel"
    s = ctypes.c_char_p()
    fn.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    return s.value.decode() if fn(ctypes.byref(s)) == 0 else "not Monel"


def main():
    import monel  # the wheel: where its library lies

    wheel_lib = os.path.realpath(os.path.join(os.path.dirname(monel.__file__), "lib", "libnccl.so.2"))
    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count()
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    n = dist.get_world_size()
    count = (1 << 20) + 3
    x = torch.arange(count, device="cuda", dtype=torch.float32).remainder(7).add(1).mul(rank + 1)
    dist.all_reduce(x)
    want = torch.arange(count, device="cuda", dtype=torch.float32).remainder(7).add(1)
    want.mul_(n * (n + 1) // 2)
    wrong = int((x != want).sum().item())
    y = torch.full((1031,), rank, device="cuda", dtype=torch.int64)
    dist.all_reduce(y, op=dist.ReduceOp.MAX)
    wrong += int((y != n - 1).sum().item())
    torch.cuda.synchronize()
    lib = os.path.realpath(loaded_nccl())
    ok = wrong == 0 and lib == wheel_lib
    print(f"rank {rank} of {n} on GPU {local}: {'PASS' if ok else 'FAIL'} all_reduce "
          f"{wrong} wrong; libnccl {lib}; {monel_version()}; "
          f"torch.cuda.nccl.version() {torch.cuda.nccl.version()}", flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
