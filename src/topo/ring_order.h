/* SPDX-License-Identifier: BSD-3-Clause */
/* Host-aware ring order: which rank sits at each ring position, so that a ring crosses between
 * hosts as few times as possible. Pure functions of the peers' host hashes; every rank computes
 * the same order from the same table. Compiles as C and as CUDA host code. */
#ifndef MONEL_TOPO_RING_ORDER_H
#define MONEL_TOPO_RING_ORDER_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* order[p] = the rank at ring position p, for p < nranks: ranks of one host contiguous (ascending),
 * hosts in the order of their lowest rank, so order[0] == 0 and a ring crosses hosts exactly
 * (number of hosts) times, or 0 when there is one host. */
void topo_ring_order(int nranks, const uint64_t* host_hash, int* order);
/* Hops p -> p+1 (mod nranks) whose two ranks are on different hosts. */
int topo_ring_crossings(int nranks, const uint64_t* host_hash, const int* order);

#ifdef __cplusplus
}
#endif
#endif
