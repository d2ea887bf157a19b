# SPDX-License-Identifier: BSD-3-Clause
"""A DDP job that loses a rank: under torchrun with 2 GPUs (or one that both ranks share), rank 1
kills itself (SIGKILL) at step 5. The survivor must end with PyTorch's DistBackendError carrying Monel's sentence (which rank
died, its host and pid, and the operation that waited on it) instead of hanging. Each rank prints
"step N" lines and, before the kill, "KILL at <unix time>" so that the driver (run-kill) can time
the survivor's end."""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    rank = int(os.environ["RANK"])
    local = int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count()
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
                                    torch.nn.Linear(4096, 4096)).cuda(), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(64, 4096, device="cuda")
    for step in range(100000):
        if rank == 1 and step == 5:
            print(f"KILL at {time.time():.3f}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item():.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
