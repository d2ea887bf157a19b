/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * abi_header - proves that Monel's nccl.h describes the same ABI as NVIDIA's.
 *
 * Four tables of facts (abi_facts.c built against each header, as C and as
 * C++) are compared name by name. NVIDIA's C and C++ tables together form the
 * reference; Monel's C table must match every fact of it that C can express,
 * Monel's C++ table every fact. Every difference is printed; the exit status
 * is 1 if there is any. No NVIDIA library is linked: only headers are used.
 *
 * --baseline compares with an older NCCL header (see baseline_changes).
 * Built only where NVIDIA's nccl.h is installed. Without a C++ compiler it is
 * built with ABI_NO_CXX and compares the C tables only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_facts.h"

static char* dup(const char* s) {
  size_t n = strlen(s) + 1;
  char* d = (char*)malloc(n);
  if (d != NULL) memcpy(d, s, n);
  return d;
}

struct fact {
  char* name;
  char* value;
};

struct table {
  const char* label;
  struct fact* facts;
  int count, cap;
  int duplicates;
};

static void table_add(void* ctx, const char* name, const char* value) {
  struct table* t = (struct table*)ctx;
  int i;
  for (i = 0; i < t->count; i++) {
    if (strcmp(t->facts[i].name, name) == 0) {
      fprintf(stderr, "abi_header: %s table has fact %s twice\n", t->label, name);
      t->duplicates++;
      return;
    }
  }
  if (t->count == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 256;
    t->facts = (struct fact*)realloc(t->facts, (size_t)t->cap * sizeof(struct fact));
    if (t->facts == NULL) {
      fprintf(stderr, "abi_header: out of memory\n");
      exit(2);
    }
  }
  t->facts[t->count].name = dup(name);
  t->facts[t->count].value = dup(value);
  if (t->facts[t->count].name == NULL || t->facts[t->count].value == NULL) {
    fprintf(stderr, "abi_header: out of memory\n");
    exit(2);
  }
  t->count++;
}

static const char* table_get(const struct table* t, const char* name) {
  int i;
  for (i = 0; i < t->count; i++)
    if (strcmp(t->facts[i].name, name) == 0) return t->facts[i].value;
  return NULL;
}

static void table_free(struct table* t) {
  int i;
  for (i = 0; i < t->count; i++) {
    free(t->facts[i].name);
    free(t->facts[i].value);
  }
  free(t->facts);
  t->facts = NULL;
  t->count = t->cap = 0;
}

/* Facts only C++ can produce. */
static int cxx_only(const char* name) {
  return strncmp(name, "cxx.", 4) == 0 || strncmp(name, "dev.cxx.", 8) == 0 ||
         strncmp(name, "h232.", 5) == 0;
}

static int is_device(const char* name) {
  return strncmp(name, "dev.", 4) == 0;
}

static int has_device_facts(const struct table* t) {
  int i;
  for (i = 0; i < t->count; i++)
    if (is_device(t->facts[i].name)) return 1;
  return 0;
}

/* --baseline: the reference is an older NCCL header. Monel's header describes a newer API that
 * programs built against the older one still run on: every fact must match except these, which
 * newer NCCL releases changed compatibly (the version, the struct grown at its end, the count of
 * results, the struct tag in C++ names), and facts the older header lacks are expected. */
static int baseline;
static const char* const baseline_changes[] = {"const.NCCL_MINOR",
                                               "const.NCCL_PATCH",
                                               "const.NCCL_VERSION_CODE",
                                               "enum.ncclNumResults",
                                               "size.ncclConfig_t",
                                               "init.config.size",
                                               "init.config.version",
                                               "init.config.bytes",
                                               "init.siminfo.version",
                                               "cxx.type.ncclConfig_t",
                                               NULL};

static int baseline_allows(const char* name, const char* ref, const char* mine) {
  for (int i = 0; baseline_changes[i]; i++)
    if (strcmp(name, baseline_changes[i]) == 0) return 1;
  /* A signature that differs only by the tag of ncclConfig_t (C++ mangles tags). */
  const char* old_tag = "ncclConfig_v22800";
  const char* new_tag = "ncclConfig_v23100";
  if (strncmp(name, "cxx.sig.", 8) == 0 && strlen(ref) == strlen(mine)) {
    size_t n = strlen(ref), k = strlen(old_tag), i = 0;
    while (i < n) {
      if (strncmp(ref + i, old_tag, k) == 0 && strncmp(mine + i, new_tag, k) == 0) {
        i += k;
      } else if (ref[i] == mine[i]) {
        i++;
      } else {
        return 0;
      }
    }
    return 1;
  }
  return 0;
}

/* Compares one of Monel's tables with the reference. with_cxx: the table was
 * produced by C++ and must hold the C++-only facts too. Returns the number of
 * mismatches; *checked and *skipped count facts. */
static int compare(const struct table* ref, const struct table* mo, int with_cxx, int* checked,
                   int* skipped) {
  int bad = 0, i;
  int ref_dev = has_device_facts(ref);
  for (i = 0; i < ref->count; i++) {
    const struct fact* f = &ref->facts[i];
    const char* v;
    if (!with_cxx && cxx_only(f->name)) continue;
    v = table_get(mo, f->name);
    (*checked)++;
    if (v == NULL) {
      printf("MISSING  %-58s nvidia=%s, absent from %s\n", f->name, f->value, mo->label);
      bad++;
    } else if (strcmp(v, f->value) != 0) {
      if (baseline && baseline_allows(f->name, f->value, v)) continue;
      printf("MISMATCH %-58s nvidia=%s %s=%s\n", f->name, f->value, mo->label, v);
      bad++;
    }
  }
  for (i = 0; i < mo->count; i++) {
    const struct fact* f = &mo->facts[i];
    if (table_get(ref, f->name) != NULL) continue;
    if (baseline) {
      (*skipped)++; /* newer than the reference header */
      continue;
    }
    if (is_device(f->name) && !ref_dev) {
      (*skipped)++; /* NVIDIA's device headers are not installed */
      continue;
    }
    printf("EXTRA    %-58s %s=%s, absent from nvidia\n", f->name, mo->label, f->value);
    bad++;
  }
  return bad;
}

int main(int argc, char** argv) {
  struct table nv_c = {"nvidia(C)", NULL, 0, 0, 0}, nv_cxx = {"nvidia(C++)", NULL, 0, 0, 0};
  struct table mo_c = {"monel(C)", NULL, 0, 0, 0}, mo_cxx = {"monel(C++)", NULL, 0, 0, 0};
  struct table ref = {"nvidia", NULL, 0, 0, 0};
  int bad = 0, checked = 0, skipped = 0, i, verbose = 0;

  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0) {
      verbose = 1;
    } else if (strcmp(argv[i], "--baseline") == 0) {
      baseline = 1;
    } else {
      fprintf(stderr, "usage: abi_header [-v] [--baseline]\n");
      return 2;
    }
  }

  abi_facts_nvidia_c(table_add, &nv_c);
  abi_facts_monel_c(table_add, &mo_c);
#ifndef ABI_NO_CXX
  abi_facts_nvidia_cxx(table_add, &nv_cxx);
  abi_facts_monel_cxx(table_add, &mo_cxx);
#endif
  bad += nv_c.duplicates + nv_cxx.duplicates + mo_c.duplicates + mo_cxx.duplicates;

  /* The reference: NVIDIA's C++ table plus its C table; where both have a fact
   * they must agree (a sanity check of the method itself). */
  for (i = 0; i < nv_cxx.count; i++) table_add(&ref, nv_cxx.facts[i].name, nv_cxx.facts[i].value);
  for (i = 0; i < nv_c.count; i++) {
    const char* v = table_get(&ref, nv_c.facts[i].name);
    if (v == NULL) {
      table_add(&ref, nv_c.facts[i].name, nv_c.facts[i].value);
    } else if (strcmp(v, nv_c.facts[i].value) != 0) {
      printf("NVIDIA's header differs between C and C++: %s C=%s C++=%s\n", nv_c.facts[i].name,
             nv_c.facts[i].value, v);
      bad++;
    }
  }
  if (verbose)
    for (i = 0; i < ref.count; i++) printf("%-60s %s\n", ref.facts[i].name, ref.facts[i].value);

  bad += compare(&ref, &mo_c, 0, &checked, &skipped);
#ifndef ABI_NO_CXX
  bad += compare(&ref, &mo_cxx, 1, &checked, &skipped);
#endif
  if (ref.count < 100) {
    printf("abi_header: only %d reference facts; the fact tables were not built right\n",
           ref.count);
    bad++;
  }

  printf("abi_header: %d facts compared (%d reference facts%s), %d skipped, %d mismatches\n",
         checked, ref.count,
#ifdef ABI_NO_CXX
         ", C only: no C++ compiler",
#else
         "",
#endif
         skipped, bad);
  if (skipped && baseline)
    printf("abi_header: %d facts of Monel's header are newer than the reference\n", skipped);
  else if (skipped)
    printf("abi_header: %d device-API facts not checked: NVIDIA's nccl_device headers are "
           "missing, or (from 2.29) describe structs Monel keeps in their 2.28 layout\n",
           skipped);
  table_free(&nv_c);
  table_free(&nv_cxx);
  table_free(&mo_c);
  table_free(&mo_cxx);
  table_free(&ref);
  return bad ? 1 : 0;
}
