/* SPDX-License-Identifier: BSD-3-Clause */
/* A sample of every thread of this process: its name, its CPU time in ns (the thread's CPU-time
 * clock, which counts what utime + stime of /proc/self/task/<tid>/stat count, to the nanosecond),
 * the part of it spent in the kernel (stime, in clock ticks: 10 ms steps on most systems) and its
 * voluntary context switches (the times it went to sleep). Used by rank_footprint and by
 * the network path's idle test (tests/net/net_idle.c). Linux only. */
#ifndef MONEL_BENCH_THREAD_SAMPLE_H
#define MONEL_BENCH_THREAD_SAMPLE_H
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SAMPLE_MAX_THREADS 64

struct sample {
  int n;
  long tid[SAMPLE_MAX_THREADS];
  char name[SAMPLE_MAX_THREADS][32];
  long long ns[SAMPLE_MAX_THREADS];
  long sleeps[SAMPLE_MAX_THREADS];
  long long sys_ns[SAMPLE_MAX_THREADS];
};

/* The thread's stime in ns (field 15 of its stat line, counted after the name's closing ')'). */
static inline long long sample_sys_ns(const char* tid) {
  char path[300], line[1024];
  snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
  FILE* f = fopen(path, "r");
  if (!f) return 0;
  char* got = fgets(line, sizeof line, f);
  fclose(f);
  char* p = got ? strrchr(line, ')') : NULL;
  unsigned long long utime = 0, stime = 0;
  if (p == NULL ||
      sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
    return 0;
  long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? (long long)(stime * (1000000000ULL / (unsigned long long)hz)) : 0;
}

static inline long long sample_thread_ns(long tid) {
  clockid_t clock = (clockid_t)((~(unsigned long)tid << 3) | 6); /* the thread's CPU clock */
  struct timespec t;
  if (clock_gettime(clock, &t) != 0) return 0;
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void sample_take(struct sample* s) {
  DIR* d = opendir("/proc/self/task");
  s->n = 0;
  for (struct dirent* e; d && s->n < SAMPLE_MAX_THREADS && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[300], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    int i = s->n;
    s->name[i][0] = '\0';
    s->sleeps[i] = 0;
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "Name:", 5) == 0) sscanf(line + 5, " %31[^\n]", s->name[i]);
      if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0) s->sleeps[i] = atol(line + 24);
    }
    fclose(f);
    s->tid[i] = atol(e->d_name);
    s->ns[i] = sample_thread_ns(s->tid[i]);
    s->sys_ns[i] = sample_sys_ns(e->d_name);
    s->n++;
  }
  if (d) closedir(d);
}

/* Index of thread tid in s, or -1. */
static inline int sample_find(const struct sample* s, long tid) {
  for (int i = 0; i < s->n; i++)
    if (s->tid[i] == tid) return i;
  return -1;
}

#endif
