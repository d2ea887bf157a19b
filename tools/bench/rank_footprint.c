/* SPDX-License-Identifier: BSD-3-Clause */
/* What one rank holds and spends, run under monelrun (MONEL_RANK, MONEL_NRANKS): after init, and
 * again after a few AllReduce sizes and one Send/Recv with each ring neighbour, the open file
 * descriptors (/proc/self/fd), the threads (/proc/self/task) and the resident memory; then the CPU
 * time all of its threads spend while the comm sits idle for --idle seconds (utime + stime of
 * /proc/self/task/<tid>/stat, to the ns, per thread name, with its kernel part, stime, in 10 ms
 * ticks, and the times each thread went to sleep), and while one AllReduce of --bytes runs --iters
 * times (CPU per operation and per byte, all threads). One line per rank.
 * --gpu: the buffers are GPU memory (ncclMemAlloc on the GPU MONEL_LOCAL_RANK names, default 0)
 * and every call goes on a CUDA stream, waited for after each call, so the same measure holds for
 * the GPU engine's proxy and network threads, of Monel or of any libnccl.so.2 (a library's
 * own threads are named apart from the program's, which spends its time waiting on the stream).
 * Usage: monelrun -n N [--fake-hosts F] rank_footprint [--idle S] [--bytes B] [--iters K] [--gpu]
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cuda_rt.h"
#include "nccl.h"
#include "thread_sample.h"

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ncclResult_t r_ = (call);                                                                      \
    if (r_ != ncclSuccess) {                                                                       \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_),                       \
              ncclGetLastError(NULL));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static int count_dir(const char* path) {
  DIR* d = opendir(path);
  int n = 0;
  for (struct dirent* e; d && (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n;
}

static long rss_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
  if (f) fclose(f);
  return kb;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* CPU ms (of which in the kernel) and sleeps per thread between two samples ("monel-proxy 1.2 ms
 * sys 0.8/3, ..."), the threads of one name added up; *total_ns: all threads. */
static void cpu_between(char* out, size_t len, const struct sample* a, const struct sample* b,
                        long long* total_ns) {
  char names[64][32];
  long long ns[64] = {0}, sys[64] = {0};
  long wakes[64] = {0};
  int k = 0;
  *total_ns = 0;
  for (int i = 0; i < b->n; i++) {
    int j = sample_find(a, b->tid[i]);
    long long before = j < 0 ? 0 : a->ns[j];
    long wbefore = j < 0 ? 0 : a->sleeps[j];
    long long sbefore = j < 0 ? 0 : a->sys_ns[j];
    int g = 0;
    while (g < k && strcmp(names[g], b->name[i]) != 0) g++;
    if (g == k) snprintf(names[k++], 32, "%s", b->name[i]);
    ns[g] += b->ns[i] - before;
    sys[g] += b->sys_ns[i] - sbefore;
    wakes[g] += b->sleeps[i] - wbefore;
    *total_ns += b->ns[i] - before;
  }
  out[0] = '\0';
  for (int g = 0; g < k; g++) {
    size_t at = strlen(out);
    snprintf(out + at, len - at, "%s%s %.1f ms sys %.0f/%ld", at ? ", " : "", names[g], ns[g] / 1e6,
             sys[g] / 1e6, wakes[g]);
  }
  size_t at = strlen(out);
  snprintf(out + at, len - at, " (total %.1f ms)", *total_ns / 1e6);
}

int main(int argc, char** argv) {
  double idle = 2;
  size_t bytes = 1 << 20;
  int iters = 20, gpu = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--gpu")) {
      gpu = 1;
      continue;
    }
    if (i + 1 >= argc) break;
    if (!strcmp(argv[i], "--idle")) idle = atof(argv[i + 1]);
    if (!strcmp(argv[i], "--bytes")) bytes = (size_t)atoll(argv[i + 1]);
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    i++;
  }
  const char *r = getenv("MONEL_RANK"), *nr = getenv("MONEL_NRANKS");
  if (!r || !nr) {
    fprintf(stderr,
            "usage: monelrun -n N rank_footprint [--idle S] [--bytes B] [--iters K] [--gpu]\n");
    return 2;
  }
  int rank = atoi(r), n = atoi(nr);
  cudaStream_t stream = NULL;
  if (gpu) {
    const char* lr = getenv("MONEL_LOCAL_RANK");
    if (bench_cuda_load() < 1 || bench_cuda_set_device(lr ? atoi(lr) : 0) != 0 ||
        bench_cuda_stream_create(&stream) != 0) {
      fprintf(stderr, "rank_footprint --gpu: no usable GPU (CUDA runtime, driver or device)\n");
      return 1;
    }
  }
  ncclUniqueId id;
  ncclComm_t comm;
  CHECK(ncclGetUniqueId(&id));
  CHECK(ncclCommInitRank(&comm, n, id, rank));
  int fd0 = count_dir("/proc/self/fd"), th0 = count_dir("/proc/self/task");
  long rss0 = rss_kb();
  size_t most = bytes > (64 << 20) ? bytes : (64 << 20);
  float* buf = NULL;
  if (gpu) {
    CHECK(ncclMemAlloc((void**)&buf, most));
    float* zero = calloc(most / sizeof(float), sizeof(float));
    if (!zero || bench_copy(buf, zero, most, stream) != 0) {
      fprintf(stderr, "rank_footprint --gpu: clearing the buffer failed\n");
      return 1;
    }
    free(zero);
  } else {
    buf = calloc(most / sizeof(float), sizeof(float));
  }
  for (size_t sz = 8; sz <= (2 << 20); sz *= 64) {
    CHECK(ncclAllReduce(buf, buf, sz / sizeof(float), ncclFloat32, ncclSum, comm, stream));
    if (gpu) bench_cuda_stream_sync(stream);
  }
  if (n > 1) { /* one message each way with each ring neighbour (by rank) */
    CHECK(ncclGroupStart());
    CHECK(ncclSend(buf, 1024, ncclFloat32, (rank + 1) % n, comm, stream));
    CHECK(ncclRecv(buf + 1024, 1024, ncclFloat32, (rank + n - 1) % n, comm, stream));
    CHECK(ncclGroupEnd());
    if (gpu) bench_cuda_stream_sync(stream);
  }
  int fd1 = count_dir("/proc/self/fd"), th1 = count_dir("/proc/self/task");
  long rss1 = rss_kb();
  static struct sample sa, sb, sc;
  char cpu_idle[2048], cpu_busy[2048];
  long long idle_ns, busy_ns;
  sample_take(&sa);
  double t0 = now_s();
  usleep((useconds_t)(idle * 1e6)); /* the idle period being measured */
  sample_take(&sb);
  double t1 = now_s();
  for (int i = 0; i < iters; i++) {
    CHECK(ncclAllReduce(buf, buf, bytes / sizeof(float), ncclFloat32, ncclSum, comm, stream));
    if (gpu && bench_cuda_stream_sync(stream) != 0) {
      fprintf(stderr, "rank_footprint --gpu: cudaStreamSynchronize failed\n");
      return 1;
    }
  }
  double t2 = now_s();
  sample_take(&sc);
  cpu_between(cpu_idle, sizeof cpu_idle, &sa, &sb, &idle_ns);
  cpu_between(cpu_busy, sizeof cpu_busy, &sb, &sc, &busy_ns);
  printf("rank %d/%d: after init fds %d threads %d rss %ld MB; after AllReduce 8 B, 512 B, 32 KB, "
         "2 MB and Send/Recv fds %d threads %d rss %ld MB; CPU ms/sleeps idle %.1f s: %s; %d x "
         "AllReduce %zu B in %.3f s: %s = %.1f us CPU per op, %.3f ns per byte\n",
         rank, n, fd0, th0, rss0 / 1024, fd1, th1, rss1 / 1024, t1 - t0, cpu_idle, iters, bytes,
         t2 - t1, cpu_busy, busy_ns / 1e3 / iters, (double)busy_ns / iters / (double)bytes);
  CHECK(ncclCommDestroy(comm));
  if (gpu) {
    ncclMemFree(buf);
    bench_cuda_stream_destroy(stream);
  } else {
    free(buf);
  }
  return 0;
}
