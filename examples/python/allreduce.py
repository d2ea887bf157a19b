# SPDX-License-Identifier: BSD-3-Clause
"""AllReduce with Monel's Python bindings on host memory (the CPU engine).

Run 4 ranks:  build/bin/monelrun -n 4 python3 examples/python/allreduce.py
monelrun gives each rank MONEL_RANK, MONEL_NRANKS and a shared NCCL_COMM_ID, so
every rank's get_unique_id() returns the same id and no id has to be sent.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import monel  # noqa: E402


def main():
    rank = int(os.environ.get("MONEL_RANK", "0"))
    nranks = int(os.environ.get("MONEL_NRANKS", "1"))

    uid = monel.get_unique_id()
    comm = monel.Communicator.init(nranks, rank, uid)
    try:
        # Every rank contributes rank+1 in each element; the sum is n(n+1)/2.
        send = np.full(1 << 16, rank + 1, dtype=np.float32)
        recv = np.empty_like(send)
        comm.allreduce(send, recv, "sum")
        expected = nranks * (nranks + 1) / 2
        assert np.all(recv == expected), (recv[:4], expected)

        # In place: the buffer is both send and receive buffer.
        buf = np.arange(8, dtype=np.int64) * (rank + 1)
        comm.allreduce(buf, buf, monel.MAX)
        assert np.array_equal(buf, np.arange(8) * nranks)

        if rank == 0:
            print(f"allreduce on {nranks} ranks: sum={recv[0]:g} max={buf.tolist()} "
                  f"({monel.library_path()})")
    finally:
        comm.destroy()


if __name__ == "__main__":
    main()
