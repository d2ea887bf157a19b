# SPDX-License-Identifier: BSD-3-Clause
"""An all_reduce through torch.distributed's NCCL backend, run under `python -m monel run
torchrun ...` (tests/torch/run-wheel). PyTorch's __init__ maps the nvidia-nccl wheel's
libnccl.so.2 too (by its path, RTLD_LOCAL), so which file is mapped proves nothing: after the
collectives each rank checks with monel._binding which file the process's ncclGetVersion and
ncclAllReduce are bound to, in the global lookup and in the GOT of every library that imports
them (libtorch_cuda.so), and prints that report. Two ranks may share one GPU (Monel allows it).
Exits non-zero when a value is wrong or a binding is not to the monel wheel's library."""
import os
import sys

import torch
import torch.distributed as dist



def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()

def main():
    import monel  # the wheel: where its library lies (importing it loads nothing)
    from monel import _binding

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
    nccl_version = torch.cuda.nccl.version()  # libtorch_cuda.so's ncclGetVersion
    bound, report = _binding.check(wheel_lib, ("ncclGetVersion", "ncclAllReduce"))
    ok = wrong == 0 and bound
    # One write per line: the ranks share the output, and print() writes the text and the
    # newline apart, so two ranks' lines could run into one.
    for line in report:
        say(f"rank {rank}: {line}")
    say(f"rank {rank} of {n} on GPU {local}: {'PASS' if ok else 'FAIL'} all_reduce "
        f"{wrong} wrong; ncclGetVersion and ncclAllReduce "
        f"{'bound' if bound else 'NOT all bound'} to {wheel_lib}; "
        f"torch.cuda.nccl.version() {nccl_version}")
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
