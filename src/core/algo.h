/* SPDX-License-Identifier: BSD-3-Clause */
/* Algorithm choice: which schedule runs a collective. NCCL_ALGO restricts the candidates with
 * NCCL's syntax (names case-insensitive):
 *   "Ring,Tree"                      allow these for every collective
 *   "^Tree"                          allow every algorithm but these
 *   "allreduce:tree;broadcast:ring"  per collective; collectives not named keep every algorithm
 *                                    (a segment without "coll:" sets that default instead)
 * The plan (core/plan.c) intersects the allowed algorithms with what the comm's engine declares
 * for the collective and picks the cheapest pair for the task's size. NCCL's other names
 * (CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT) are accepted in the list but Monel has none of
 * them; Monel adds OneShot and TwoShot (AllReduce). NCCL_PROTO uses the same syntax (core/plan.c).
 * A list that leaves a collective without an algorithm, or an unknown name, is a usage error. */
#ifndef MONEL_CORE_ALGO_H
#define MONEL_CORE_ALGO_H
#include <stddef.h>
#include "core/comm.h"
#include "core/plan.h"

const char* algo_name(enum algo_id a);

/* Parse an NCCL_ALGO value into one mask of allowed algorithms per collective. On error returns
 * ncclInvalidUsage and writes a sentence into err. */
ncclResult_t algo_parse(const char* s, unsigned allowed[COLL_COUNT], char* err, size_t errlen);

/* NCCL's list syntax for any set of names (NCCL_ALGO's and NCCL_PROTO's): "A,B", "^A", "coll:A;
 * coll2:B" (names case-insensitive) -> a mask of allowed names (bit i: names[i]) per collective.
 * var ("NCCL_ALGO") and what ("an algorithm") make the error sentences. */
struct algo_names {
  const char* var;
  const char* what;
  const char* const* names;
  int count;
};
ncclResult_t algo_list_parse(const struct algo_names* nm, const char* s,
                             unsigned allowed[COLL_COUNT], char* err, size_t errlen);

/* The collectives NCCL_ALGO and NCCL_PROTO apply to (their per-collective lists name them). */
int algo_coll_is_tunable(enum coll_kind coll);
/* Its name in those lists ("allreduce"). */
const char* algo_coll_key(enum coll_kind coll);

/* 1 when NCCL_ALGO (parsed once) allows algorithm a for coll; 0 also when it does not parse. */
int algo_allowed(enum coll_kind coll, enum algo_id a);

#endif
