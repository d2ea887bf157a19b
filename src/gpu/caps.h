/* SPDX-License-Identifier: BSD-3-Clause */
/* The CUDA engine's capability and cost table and the rules of its fit (core/plan.h). Free of
 * CUDA, so that the unit tests run it on any machine. */
#ifndef MONEL_GPU_CAPS_H
#define MONEL_GPU_CAPS_H
#include "core/plan.h"
#include "core/task.h"

#define GPU_NCAPS 19
extern const struct plan_row gpu_caps[GPU_NCAPS];

/* Bytes of one block of the one-shot LL kernel (DEV_LL_BLOCK_DATA; engine.c checks they agree). */
#define GPU_LL_PART_BYTES 8192

/* What the fit reads of a comm (engine.c fills it from its state and the parameters). */
struct gpu_fit_in {
  int nranks;
  int ll_ok;             /* one-shot LL buffers mapped between every pair */
  size_t ll_cap;         /* bytes per rank they hold (DEV_LL_MAX_BYTES) */
  size_t oneshot_max;    /* MONEL_ONESHOT_MAX: (n-1) x bytes up to which one-shot LL is faster */
  int onehop_ok;         /* one-hop across the network set up (a network peer, FIFOs to all) */
  size_t p2p_slot_bytes; /* the one hop's buffer must fit a point-to-point slot */
  size_t onehop_max;     /* MONEL_NET_ONEHOP_MAX: bytes to one peer up to which one hop is faster */
  int doubling;      /* from how many ranks recursive doubling replaces the one hop (0: never) */
  int doubling_pow2; /* ... on powers of two only */
  int tree_ok;       /* point-to-point FIFOs to every peer (the tree's) */
  int ll128_lines;   /* LL128's lines are safe between every pair (gpu_check_ll128) */
};
struct plan_fit gpu_fit(const struct gpu_fit_in* in, const struct task* t,
                        const struct plan_row* row);

#endif
