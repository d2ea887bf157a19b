/* SPDX-License-Identifier: BSD-3-Clause */
/* topo/ring_order.c: for 1..8 hosts and 1..64 ranks in interleaved, blocked and random layouts the
 * order is a permutation, starts at rank 0, keeps each host's ranks contiguous and ascending, lists
 * hosts in the order of their lowest rank, and crosses hosts exactly (number of hosts) times, or
 * 0 with one host. A few layouts are also checked against orders written out by hand. */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"
#include "topo/ring_order.h"

#define MAXR 64

static uint64_t hash_of(int host) {
  return 0x9e3779b97f4a7c15ULL * (uint64_t)(host + 1) ^ 0x51ed27ULL;
}

static int count_hosts(int n, const uint64_t* h) {
  int hosts = 0;
  for (int r = 0; r < n; r++) {
    int seen = 0;
    for (int q = 0; q < r; q++) seen |= h[q] == h[r];
    hosts += !seen;
  }
  return hosts;
}

/* Every invariant of the contract, exactly. */
static void check_order(int n, const uint64_t* h) {
  int order[MAXR], hits[MAXR] = {0};
  for (int p = 0; p < n; p++) order[p] = -1;
  topo_ring_order(n, h, order);
  for (int p = 0; p < n; p++) {
    CHECK(order[p] >= 0 && order[p] < n);
    hits[order[p]]++;
  }
  for (int r = 0; r < n; r++) CHECK_EQ(hits[r], 1);
  CHECK_EQ(order[0], 0);
  int hosts = count_hosts(n, h), runs = 0;
  for (int p = 0; p < n; p++) {
    int opens = p == 0 || h[order[p - 1]] != h[order[p]];
    runs += opens;
    if (!opens) CHECK(order[p] > order[p - 1]); /* ascending within a host */
  }
  CHECK_EQ(runs, hosts); /* each host is one run: contiguous */
  /* hosts in the order of their lowest rank: run starts are increasing ranks, and each run's
   * first rank is the lowest rank of its host */
  int last_start = -1;
  for (int p = 0; p < n; p++) {
    if (p > 0 && h[order[p - 1]] == h[order[p]]) continue;
    CHECK(order[p] > last_start);
    last_start = order[p];
    for (int q = 0; q < order[p]; q++) CHECK(h[q] != h[order[p]]);
  }
  CHECK_EQ(topo_ring_crossings(n, h, order), hosts == 1 ? 0 : hosts);
}

TEST(interleaved_and_blocked) {
  uint64_t h[MAXR];
  for (int hosts = 1; hosts <= 8; hosts++)
    for (int n = hosts; n <= MAXR; n++) {
      for (int r = 0; r < n; r++) h[r] = hash_of(r % hosts);
      check_order(n, h);
      int per = (n + hosts - 1) / hosts;
      for (int r = 0; r < n; r++) h[r] = hash_of(r / per);
      check_order(n, h);
    }
}

TEST(random_layouts) {
  uint64_t h[MAXR];
  unsigned seed = 12345;
  for (int iter = 0; iter < 20000; iter++) {
    int n = 1 + rand_r(&seed) % MAXR, hosts = 1 + rand_r(&seed) % 8;
    for (int r = 0; r < n; r++) h[r] = hash_of(rand_r(&seed) % hosts);
    check_order(n, h);
  }
}

TEST(known_orders) {
  uint64_t h[8];
  int order[8];
  /* 3 hosts x 2 ranks, interleaved */
  for (int r = 0; r < 6; r++) h[r] = hash_of(r % 3);
  topo_ring_order(6, h, order);
  int want3[6] = {0, 3, 1, 4, 2, 5};
  for (int p = 0; p < 6; p++) CHECK_EQ(order[p], want3[p]);
  /* 2 hosts x 3 ranks, interleaved */
  for (int r = 0; r < 6; r++) h[r] = hash_of(r % 2);
  topo_ring_order(6, h, order);
  int want2[6] = {0, 2, 4, 1, 3, 5};
  for (int p = 0; p < 6; p++) CHECK_EQ(order[p], want2[p]);
  CHECK_EQ(topo_ring_crossings(6, h, order), 2);
  /* the rank-order ring of that layout crosses on every hop */
  int ident[6] = {0, 1, 2, 3, 4, 5};
  CHECK_EQ(topo_ring_crossings(6, h, ident), 6);
  /* hosts in the order of their lowest rank, not of their hash */
  uint64_t mixed[7] = {9, 3, 3, 9, 1, 3, 1};
  topo_ring_order(7, mixed, order);
  int wantm[7] = {0, 3, 1, 2, 5, 4, 6};
  for (int p = 0; p < 7; p++) CHECK_EQ(order[p], wantm[p]);
  CHECK_EQ(topo_ring_crossings(7, mixed, order), 3);
  /* one host: identity, no crossing; one rank */
  for (int r = 0; r < 8; r++) h[r] = 42;
  topo_ring_order(8, h, order);
  for (int p = 0; p < 8; p++) CHECK_EQ(order[p], p);
  CHECK_EQ(topo_ring_crossings(8, h, order), 0);
  topo_ring_order(1, h, order);
  CHECK_EQ(order[0], 0);
  CHECK_EQ(topo_ring_crossings(1, h, order), 0);
}
