/* SPDX-License-Identifier: BSD-3-Clause */
/* Host-aware ring order. Walk the ranks in ascending order; the first rank of a host not seen yet
 * opens that host's run, which takes every rank of that host in ascending order. So hosts appear
 * in the order of their lowest rank and order[0] == 0.
 *
 *   ranks 0..5 on hosts a b c a b c  ->  order 0 3 1 4 2 5  (3 crossings: 3->1, 4->2, 5->0)
 *
 * O(nranks^2) compares and no allocation: a rank is placed once its host's run is written, and
 * "placed" is known from the position array itself. Run once per comm, so the cost does not
 * matter up to thousands of ranks. */
#include "topo/ring_order.h"

void topo_ring_order(int nranks, const uint64_t* host_hash, int* order) {
  int p = 0;
  for (int r = 0; r < nranks; r++) {
    int seen = 0; /* does a lower rank share r's host? then r is already placed */
    for (int q = 0; q < r && !seen; q++) seen = host_hash[q] == host_hash[r];
    if (seen) continue;
    for (int q = r; q < nranks; q++)
      if (host_hash[q] == host_hash[r]) order[p++] = q;
  }
}

int topo_ring_crossings(int nranks, const uint64_t* host_hash, const int* order) {
  int n = 0;
  for (int p = 0; p < nranks; p++) n += host_hash[order[p]] != host_hash[order[(p + 1) % nranks]];
  return n;
}
