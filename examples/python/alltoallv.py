# SPDX-License-Identifier: BSD-3-Clause
"""AlltoAllv with Monel's Python bindings on host memory (the CPU engine).

Run 4 ranks:  build/bin/monelrun -n 4 python3 examples/python/alltoallv.py

Rank i sends i+j+1 elements to rank j, each of value 100*i + j. The four count
and offset matrices are n x n (row i = rank i) and identical on every rank:
each rank builds the full matrices itself, nothing is exchanged for them.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import numpy as np  # noqa: E402

import monel  # noqa: E402


def offsets(counts):
    """Exclusive prefix sums along each row."""
    d = np.zeros_like(counts)
    d[:, 1:] = np.cumsum(counts, axis=1)[:, :-1]
    return d


def main():
    rank = int(os.environ.get("MONEL_RANK", "0"))
    n = int(os.environ.get("MONEL_NRANKS", "1"))

    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    sendcounts = i + j + 1        # rank i sends i+j+1 elements to rank j
    recvcounts = sendcounts.T     # rank i receives from rank j what j sends to i
    sdispls, rdispls = offsets(sendcounts), offsets(recvcounts)

    send = np.concatenate([np.full(sendcounts[rank, p], 100 * rank + p, dtype=np.int32)
                           for p in range(n)])
    recv = np.full(recvcounts[rank].sum(), -1, dtype=np.int32)

    with monel.Communicator.init(n, rank, monel.get_unique_id()) as comm:
        comm.alltoallv(send, sendcounts, sdispls, recv, recvcounts, rdispls)

    expected = np.concatenate([np.full(recvcounts[rank, p], 100 * p + rank, dtype=np.int32)
                               for p in range(n)])
    assert np.array_equal(recv, expected), (recv, expected)
    print(f"rank {rank}: received {recv.size} elements: {recv.tolist()}")


if __name__ == "__main__":
    main()
