/* Algorithm choice: NCCL_ALGO parsing and the cheapest allowed algorithm per task. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "core/algo.h"
#include "util/check.h"
#include "util/param.h"
#include "core/tune.h"
#include "util/dtype.h"

#define ALL_ALGOS ((1u << ALGO_COUNT) - 1)

static const char* const names[ALGO_COUNT] = {"Tree",         "Ring",    "CollnetDirect",
                                              "CollnetChain", "NVLS",    "NVLSTree",
                                              "PAT",          "OneShot", "TwoShot"};

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

unsigned algo_available(enum coll_kind coll) {
  switch (coll) {
  case COLL_ALLREDUCE:
    return 1u << ALGO_RING | 1u << ALGO_TREE | 1u << ALGO_ONESHOT | 1u << ALGO_TWOSHOT;
  case COLL_BROADCAST:
  case COLL_REDUCE:
    return 1u << ALGO_RING | 1u << ALGO_TREE;
  case COLL_ALLGATHER:
  case COLL_REDUCESCATTER:
    return 1u << ALGO_RING;
  default:
    return 0;
  }
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

/* "Ring,Tree" or "^Tree" in [s, end) -> mask. */
static ncclResult_t parse_list(const char* s, const char* end, unsigned* mask, char* err,
                               size_t errlen) {
  trim(&s, &end);
  int invert = s < end && *s == '^';
  unsigned m = 0;
  if (invert) s++;
  while (s < end) {
    const char* comma = memchr(s, ',', (size_t)(end - s));
    const char *w = s, *we = comma ? comma : end;
    trim(&w, &we);
    if (w < we) {
      int a = 0;
      while (a < ALGO_COUNT && !same_word(w, we, names[a])) a++;
      if (a == ALGO_COUNT) {
        snprintf(err, errlen,
                 "\"%.*s\" is not an algorithm (the names are Tree, Ring, CollnetDirect, "
                 "CollnetChain, NVLS, NVLSTree, PAT, OneShot and TwoShot, in any case)",
                 (int)(we - w), w);
        return ncclInvalidUsage;
      }
      m |= 1u << a;
    }
    s = comma ? comma + 1 : end;
  }
  *mask = invert ? ALL_ALGOS & ~m : m;
  return ncclSuccess;
}

ncclResult_t algo_parse(const char* s, unsigned allowed[COLL_COUNT], char* err, size_t errlen) {
  unsigned def = ALL_ALGOS;
  int named[COLL_COUNT] = {0};
  const char* end = s ? s + strlen(s) : s;
  for (int c = 0; c < COLL_COUNT; c++) allowed[c] = ALL_ALGOS;
  while (s && s < end) {
    const char* semi = memchr(s, ';', (size_t)(end - s));
    const char* se = semi ? semi : end;
    const char* colon = memchr(s, ':', (size_t)(se - s));
    if (colon == NULL) {
      NCCLCHECK(parse_list(s, se, &def, err, errlen));
    } else {
      const char *k = s, *ke = colon;
      trim(&k, &ke);
      size_t i = 0;
      while (i < NKEYS && !same_word(k, ke, colls[i].key)) i++;
      if (i == NKEYS) {
        snprintf(err, errlen,
                 "\"%.*s\" is not a collective NCCL_ALGO can name (use allreduce, broadcast, "
                 "reduce, allgather or reducescatter)",
                 (int)(ke - k), k);
        return ncclInvalidUsage;
      }
      NCCLCHECK(parse_list(colon + 1, se, &allowed[colls[i].coll], err, errlen));
      named[colls[i].coll] = 1;
    }
    s = semi ? semi + 1 : end;
  }
  for (int c = 0; c < COLL_COUNT; c++)
    if (!named[c]) allowed[c] = def;
  return ncclSuccess;
}

static struct {
  pthread_once_t once;
  ncclResult_t res;
  unsigned allowed[COLL_COUNT];
  char err[256];
  unsigned char logged[COLL_COUNT][64]; /* (coll, log2 of bytes) already logged at INFO */
} cfg = {PTHREAD_ONCE_INIT};

static void load(void) {
  cfg.res = algo_parse(param_str(PARAM_ALGO), cfg.allowed, cfg.err, sizeof cfg.err);
}

/* "Ring" or "Tree, Ring" for a mask of algorithms. */
static void mask_words(unsigned m, char* out, size_t len) {
  out[0] = '\0';
  for (int a = 0; a < ALGO_COUNT; a++)
    if (m & (1u << a))
      snprintf(out + strlen(out), len - strlen(out), "%s%s", out[0] ? ", " : "", names[a]);
}

static int size_class(size_t bytes) {
  int k = 0;
  while (bytes > 1 && k < 63) bytes >>= 1, k++;
  return k;
}

int algo_allowed(enum coll_kind coll, enum algo_id a) {
  pthread_once(&cfg.once, load);
  return cfg.res == ncclSuccess && (cfg.allowed[coll] >> a & 1u);
}

ncclResult_t algo_choose(const struct ncclComm* comm, const struct task* t, enum algo_id* out) {
  pthread_once(&cfg.once, load);
  unsigned avail = algo_available(t->coll);
  *out = ALGO_RING;
  if (avail == 0) return ncclSuccess;
  if (cfg.res != ncclSuccess && t->algo_mask == 0) {
    WARN("%s #%llu on rank %d: NCCL_ALGO=\"%s\" cannot be used: %s", coll_name(t->coll),
         (unsigned long long)t->seq, comm->rank, param_str(PARAM_ALGO), cfg.err);
    return ncclInvalidUsage;
  }
  /* A call's own selection (ncclCollConfig_t.algSelection) replaces NCCL_ALGO for it. */
  unsigned cand = avail & (t->algo_mask ? t->algo_mask : cfg.allowed[t->coll]);
  if (cand == 0) {
    char has[64];
    mask_words(avail, has, sizeof has);
    WARN("%s #%llu on rank %d: NCCL_ALGO=\"%s\" leaves no algorithm for %s: Monel runs it with "
         "%s only; allow one of them, or restrict other collectives only (e.g. \"allreduce:tree\")",
         coll_name(t->coll), (unsigned long long)t->seq, comm->rank, param_str(PARAM_ALGO),
         coll_name(t->coll), has);
    return ncclInvalidUsage;
  }
  double best = -1;
  for (int a = 0; a < ALGO_COUNT; a++) {
    if (!(cand & (1u << a))) continue;
    double us = tune_algo_us(comm, t, (enum algo_id)a);
    if (best < 0 || us < best || (us == best && a == ALGO_RING)) best = us, *out = (enum algo_id)a;
  }
  size_t bytes = t->count * dtype_size(t->dtype);
  int k = size_class(bytes);
  if (LOG_ENABLED(LOG_INFO) && !__atomic_exchange_n(&cfg.logged[t->coll][k], 1, __ATOMIC_RELAXED))
    INFO(LOG_TUNING, "%s of %zu bytes (sizes 2^%d..2^%d) on %d ranks: %s, estimated %.1f us",
         coll_name(t->coll), bytes, k, k + 1, comm->nranks, names[*out], best);
  return ncclSuccess;
}
