/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL_ALGO parsing, and NCCL's list syntax that NCCL_PROTO shares (core/plan.c). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "core/algo.h"
#include "util/check.h"
#include "util/param.h"

static const char* const names[ALGO_COUNT] = {
    "Tree",     "Ring", "CollnetDirect", "CollnetChain", "NVLS",
    "NVLSTree", "PAT",  "OneShot",       "TwoShot",      "RecDoubling"};

/* The collectives NCCL_ALGO can name, by their lower-case NCCL names. */
static const struct {
  const char* key;
  enum coll_kind coll;
} colls[] = {{"allreduce", COLL_ALLREDUCE},
             {"broadcast", COLL_BROADCAST},
             {"reduce", COLL_REDUCE},
             {"allgather", COLL_ALLGATHER},
             {"reducescatter", COLL_REDUCESCATTER}};
#define NKEYS (sizeof colls / sizeof colls[0])

const char* algo_name(enum algo_id a) {
  return (unsigned)a < ALGO_COUNT ? names[a] : "unknown";
}

/* [*s, end) without leading and trailing blanks. */
static void trim(const char** s, const char** end) {
  while (*s < *end && isspace((unsigned char)**s)) (*s)++;
  while (*end > *s && isspace((unsigned char)(*end)[-1])) (*end)--;
}

static int same_word(const char* s, const char* end, const char* word) {
  size_t n = (size_t)(end - s);
  return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* "A, B, C" for a list of names. */
static void join_names(const struct algo_names* nm, char* out, size_t len) {
  out[0] = '\0';
  for (int i = 0; i < nm->count; i++)
    snprintf(out + strlen(out), len - strlen(out), "%s%s",
             i == 0               ? ""
             : i + 1 == nm->count ? " and "
                                  : ", ",
             nm->names[i]);
}

/* "Ring,Tree" or "^Tree" in [s, end) -> mask. */
static ncclResult_t parse_list(const struct algo_names* nm, const char* s, const char* end,
                               unsigned* mask, char* err, size_t errlen) {
  unsigned all = (1u << nm->count) - 1, m = 0;
  trim(&s, &end);
  int invert = s < end && *s == '^';
  if (invert) s++;
  while (s < end) {
    const char* comma = memchr(s, ',', (size_t)(end - s));
    const char *w = s, *we = comma ? comma : end;
    trim(&w, &we);
    if (w < we) {
      int a = 0;
      while (a < nm->count && !same_word(w, we, nm->names[a])) a++;
      if (a == nm->count) {
        char list[160];
        join_names(nm, list, sizeof list);
        snprintf(err, errlen, "\"%.*s\" is not %s (the names are %s, in any case)", (int)(we - w),
                 w, nm->what, list);
        return ncclInvalidUsage;
      }
      m |= 1u << a;
    }
    s = comma ? comma + 1 : end;
  }
  *mask = invert ? all & ~m : m;
  return ncclSuccess;
}

const char* algo_coll_key(enum coll_kind coll) {
  for (size_t i = 0; i < NKEYS; i++)
    if (colls[i].coll == coll) return colls[i].key;
  return "allreduce";
}

int algo_coll_is_tunable(enum coll_kind coll) {
  for (size_t i = 0; i < NKEYS; i++)
    if (colls[i].coll == coll) return 1;
  return 0;
}

ncclResult_t algo_list_parse(const struct algo_names* nm, const char* s,
                             unsigned allowed[COLL_COUNT], char* err, size_t errlen) {
  unsigned def = (1u << nm->count) - 1;
  int named[COLL_COUNT] = {0};
  const char* end = s ? s + strlen(s) : s;
  for (int c = 0; c < COLL_COUNT; c++) allowed[c] = def;
  while (s && s < end) {
    const char* semi = memchr(s, ';', (size_t)(end - s));
    const char* se = semi ? semi : end;
    const char* colon = memchr(s, ':', (size_t)(se - s));
    if (colon == NULL) {
      NCCLCHECK(parse_list(nm, s, se, &def, err, errlen));
    } else {
      const char *k = s, *ke = colon;
      trim(&k, &ke);
      size_t i = 0;
      while (i < NKEYS && !same_word(k, ke, colls[i].key)) i++;
      if (i == NKEYS) {
        snprintf(err, errlen,
                 "\"%.*s\" is not a collective %s can name (use allreduce, broadcast, "
                 "reduce, allgather or reducescatter)",
                 (int)(ke - k), k, nm->var);
        return ncclInvalidUsage;
      }
      NCCLCHECK(parse_list(nm, colon + 1, se, &allowed[colls[i].coll], err, errlen));
      named[colls[i].coll] = 1;
    }
    s = semi ? semi + 1 : end;
  }
  for (int c = 0; c < COLL_COUNT; c++)
    if (!named[c]) allowed[c] = def;
  return ncclSuccess;
}

ncclResult_t algo_parse(const char* s, unsigned allowed[COLL_COUNT], char* err, size_t errlen) {
  static const struct algo_names nm = {"NCCL_ALGO", "an algorithm", names, ALGO_COUNT};
  return algo_list_parse(&nm, s, allowed, err, errlen);
}

static struct {
  pthread_once_t once;
  ncclResult_t res;
  unsigned allowed[COLL_COUNT];
  char err[256];
} cfg = {PTHREAD_ONCE_INIT};

static void load(void) {
  cfg.res = algo_parse(param_str(PARAM_ALGO), cfg.allowed, cfg.err, sizeof cfg.err);
}

int algo_allowed(enum coll_kind coll, enum algo_id a) {
  pthread_once(&cfg.once, load);
  return cfg.res == ncclSuccess && (cfg.allowed[coll] >> a & 1u);
}
