/* SPDX-License-Identifier: BSD-3-Clause */
/* The exact-check matrix: every collective x dtype x op x count x root x in/out of place, checked
 * bit for bit, in the three ways a program drives ranks:
 *
 *   matrix --mode all -n N        one process, ncclCommInitAll over N GPUs, every call for the N
 *                                 comms inside one ncclGroupStart/End
 *   matrix --mode threads -n N    N threads, one GPU each (cudaSetDevice(i), ncclCommInitRank)
 *   monelrun -n N matrix --mode procs
 *                                 one process per GPU (MONEL_RANK, MONEL_NRANKS, NCCL_COMM_ID;
 *                                 GPU MONEL_LOCAL_RANK)
 *   monelrun -n P matrix --mode procs --threads T
 *                                 P processes of T rank-threads each (ranks p*T .. p*T+T-1, all
 *                                 on the process's GPU: P x T ranks; with --fake-hosts P each
 *                                 process is a host of its own), each thread calling
 *                                 ncclCommInitRank
 * More than 12 ranks (at most 64) run the 32- and 64-bit types only (matrix.h).
 *
 * Collectives: AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AlltoAll, AlltoAllv
 * (monel.h), Gather, Scatter, Send/Recv (ring exchange, all pairs with a send to self, self only,
 * each in one group). Every dtype; for reducing ones every op (sum, prod, max, min, avg,
 * PreMulSum with a host and with a device scalar). Counts 0, 1, 1023 and --large (64M+3).
 * Every root at the small counts, roots 0 and n-1 at the large one. In place as NCCL defines it
 * (AllGather: sendbuff == recvbuff + rank*count; ReduceScatter: recvbuff == sendbuff +
 * rank*count; Gather at the root: sendbuff == recvbuff + root*count; Scatter at the root:
 * recvbuff == sendbuff + root*count; Broadcast, Reduce, AllReduce: the same buffer); AlltoAll(v)
 * and Send/Recv out of place only.
 *
 * Each case: the buffers a rank uses are set to 0xa5 bytes (and MX_GUARD elements past them),
 * the input is filled, the call runs, then every element is checked against matrix.h: the output,
 * an out-of-place input (must be unchanged), the receive buffer of a non-root Reduce or Gather
 * (must be untouched) and the guards. On GPUs a fill and a check kernel do that on the device
 * (matrix_kernels.cu) and one small copy per rank brings the counts back. Without a GPU (or with
 * MONEL_ENGINE=cpu) the same cases run on host memory and the CPU engine, checked by host loops
 * with the same formulas.
 *
 * Options: --colls a,b  --dtypes a,b  --ops a,b  --counts a,b  --large N (64M+3; K/M/G and +k
 * accepted)  --quick (a reduced set for forced-environment runs)  --graph (each case captured
 * in a CUDA graph, replayed twice, checked after both)  --capture global|thread|relaxed
 * --allow-unsupported (an ncclInvalidUsage with a message is reported as SKIP for that
 * collective instead of FAIL)  --timeout S (per case, default 120)  -v (print each case).
 * --plant-error corrupts one element of one output per collective after the call, to prove that
 * the checks see it.
 *
 * Files: matrix.h (the expected value of every element, host and device), matrix_kernels.cu (the
 * fill and check kernels), matrix_case.c (one case on one rank), this file (the case list, the
 * modes, the watchdog, the summary, the options).
 *
 * Output: a FAIL line per failing check (case, rank, region, count and first wrong element,
 * expected and actual bits), a line per collective, then "PASS matrix mode=M n=N (K cases)" or
 * "FAIL matrix ..."; exit status 0 only on PASS (or SKIP). A case that does not finish within
 * the timeout prints which one and which rank and exits with status 3. */
#include <dlfcn.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "matrix_run.h"

const char* const mode_names[3] = {"all", "threads", "procs"};
const char* const coll_names[MX_NCOLLS] = {"allreduce",     "broadcast", "reduce",    "allgather",
                                           "reducescatter", "alltoall",  "alltoallv", "gather",
                                           "scatter",       "sendrecv"};
const char* const op_names[MX_NOPS] = {"sum", "prod", "max", "min", "avg", "premul", "premul_dev"};
struct options opt;
struct tcase* cases;
int ncases;
struct rank* ranks;
int nlocal;
alltoallv_fn p_alltoallv;
char unsup_msg[MX_NCOLLS][512];
typedef ncclResult_t (*engine_fn)(ncclComm_t, const char**);
static engine_fn p_engine; /* ncclMonelCommGetEngine, when the library has it */

double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void die(const char* fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fflush(stdout);
  printf("FAIL matrix mode=%s n=%d: %s\n", mode_names[opt.mode], opt.n, line);
  fflush(stdout);
  _exit(1);
}

/* ---- the case list ---- */

static void add_case(int coll, int dt, int op, size_t count, int variant, int inplace) {
  static int cap;
  if (ncases == cap) {
    cap = cap ? 2 * cap : 1024;
    cases = realloc(cases, (size_t)cap * sizeof *cases);
    if (!cases) die("out of memory for the case list");
  }
  struct tcase* t = &cases[ncases];
  memset(t, 0, sizeof *t);
  t->c = (struct mx_case){.coll = coll,
                          .op = op,
                          .nranks = opt.n,
                          .variant = variant,
                          .dt = dt,
                          .salt = (uint32_t)(ncases + 1),
                          .count = count};
  t->inplace = inplace;
  ncases++;
}

static void build_cases(void) {
  int n = opt.n;
  for (int coll = 0; coll < MX_NCOLLS; coll++) {
    if (!(opt.colls & (1u << coll))) continue;
    int planted = 0;
    for (int dt = 0; dt < ncclNumTypes; dt++) {
      if (!(opt.dtypes & (1u << dt))) continue;
      for (int op = 0; op < MX_NOPS; op++) {
        if (mx_reduces(coll) ? !(opt.ops & (1u << op)) : op != MX_SUM) continue;
        for (int k = 0; k < opt.ncounts; k++) {
          size_t count = opt.counts[k];
          int nvar = coll == MX_SENDRECV ? MX_SR_NPATTERNS : is_rooted(coll) ? n : 1;
          for (int v = 0; v < nvar; v++) {
            if (is_rooted(coll) && !opt.every_root && (count > 1023 || opt.quick) && v != 0 &&
                v != n - 1)
              continue;
            for (int ip = 0; ip < 2; ip++) {
              if (ip && (coll == MX_ALLTOALL || coll == MX_ALLTOALLV || coll == MX_SENDRECV))
                continue;
              add_case(coll, dt, op, count, v, ip);
              if (opt.plant && !planted && count > 1) cases[ncases - 1].plant = planted = 1;
            }
          }
        }
      }
    }
  }
}

/* ---- ranks: setup and teardown ---- */

static size_t largest_count(void) {
  size_t m = 0;
  for (int i = 0; i < opt.ncounts; i++)
    if (opt.counts[i] > m) m = opt.counts[i];
  return m;
}

static void check_engine(struct rank* k) {
  const char* name = NULL;
  if (!p_engine || p_engine(k->comm, &name) != ncclSuccess || !name) return; /* not Monel */
  const char* want = opt.device ? "gpu" : "cpu";
  if (strcmp(name, want) != 0)
    die("rank %d runs on the %s engine, expected the %s engine", k->rank, name, want);
}

static void setup_rank(struct rank* k) {
  size_t bytes = ((size_t)opt.n * largest_count() + MX_GUARD) * 8;
  size_t rbytes = MX_MAXREGIONS * sizeof(struct mx_result);
  set_device(k);
  check_engine(k);
  k->vmat = malloc(4 * (size_t)opt.n * opt.n * sizeof *k->vmat);
  if (!k->vmat) die("out of host memory");
  if (opt.device) {
    CK(cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking));
    CK(cudaMalloc((void**)&k->sbuf, bytes));
    CK(cudaMalloc((void**)&k->rbuf, bytes));
    CK(cudaMalloc(&k->dscalar, 16));
    CK(cudaMalloc((void**)&k->dres, rbytes));
    CK(cudaMallocHost((void**)&k->hres, rbytes));
  } else {
    k->stream = NULL;
    k->sbuf = malloc(bytes);
    k->rbuf = malloc(bytes);
    k->dscalar = malloc(16);
    k->hres = k->dres = malloc(rbytes);
    if (!k->sbuf || !k->rbuf || !k->dscalar || !k->hres)
      die("rank %d: cannot allocate 2 x %zu bytes of host memory (use --large to lower the large "
          "count)",
          k->rank, bytes);
  }
}

static void teardown_rank(struct rank* k) {
  progress(k, -4);
  set_device(k);
  if (opt.device) {
    CK(cudaStreamSynchronize(k->stream));
    CK(cudaFree(k->sbuf));
    CK(cudaFree(k->rbuf));
    CK(cudaFree(k->dscalar));
    CK(cudaFree(k->dres));
    CK(cudaFreeHost(k->hres));
    CK(cudaStreamDestroy(k->stream));
  } else {
    free(k->sbuf);
    free(k->rbuf);
    free(k->dscalar);
    free(k->hres);
  }
  free(k->vmat);
  ncclResult_t res = ncclCommDestroy(k->comm);
  if (res != ncclSuccess)
    die("rank %d: ncclCommDestroy: %s: %s", k->rank, ncclGetErrorString(res), last_error(NULL));
  progress(k, -1);
}

/* A failed initialisation: an ncclInvalidUsage with a reason is this configuration being
 * unsupported (SKIP with --allow-unsupported); anything else fails. */
static void init_failed(ncclResult_t res, const char* call, int rank) {
  const char* msg = last_error(NULL);
  if (res == ncclInvalidUsage && *msg && opt.allow_unsupported) {
    fflush(stdout);
    printf("SKIP matrix mode=%s n=%d: unsupported here: %s on rank %d: %s\n", mode_names[opt.mode],
           opt.n, call, rank, msg);
    fflush(stdout);
    _exit(0);
  }
  die("%s on rank %d: %s: %s", call, rank, ncclGetErrorString(res), *msg ? msg : "(no message)");
}

/* ---- the watchdog ---- */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cond = PTHREAD_COND_INITIALIZER;
static int wd_stop;

static void* watchdog(void* arg) {
  (void)arg;
  pthread_mutex_lock(&wd_lock);
  while (!wd_stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&wd_cond, &wd_lock, &until);
    long long now = (long long)(now_s() * 1000);
    for (int i = 0; i < nlocal && !wd_stop; i++) {
      int cur = atomic_load(&ranks[i].cur);
      long long since = atomic_load(&ranks[i].since_ms);
      if (cur == -1 || now - since < (long long)opt.timeout * 1000) continue;
      char what[200], line[400];
      if (cur >= 0) {
        int l = snprintf(what, sizeof what, "case #%d: ", cur);
        describe(&cases[cur], what + l, sizeof what - (size_t)l);
      } else {
        snprintf(what, sizeof what, "%s",
                 cur == -2   ? "the communicator's initialisation"
                 : cur == -3 ? "the final tally (an AllReduce)"
                             : "the release of buffers and communicator");
      }
      int len = snprintf(line, sizeof line,
                         "FAIL matrix mode=%s n=%d: timeout: rank %d spent more than %d s in %s\n",
                         mode_names[opt.mode], opt.n, ranks[i].rank, opt.timeout, what);
      if (write(1, line, (size_t)len) < 0) {
      }
      _exit(3);
    }
  }
  pthread_mutex_unlock(&wd_lock);
  return NULL;
}

/* ---- tallies and the summary ---- */

/* Per collective: cases run, failed checks, unsupported; summed over ranks (cases: rank 0's). */
struct tally {
  long long ncase[MX_NCOLLS], nfail[MX_NCOLLS], unsup[MX_NCOLLS];
};

static void tally_add(struct tally* t, const struct rank* k, int first) {
  for (int c = 0; c < MX_NCOLLS; c++) {
    if (first) t->ncase[c] = k->ncase[c];
    t->nfail[c] += k->nfail[c];
    t->unsup[c] += k->unsupported[c];
  }
}

/* Mode procs: v[0..len) summed over every process, by an AllReduce of int64 on the comm. */
static void sum_over_ranks(struct rank* k, long long* v, int len) {
  size_t bytes = (size_t)len * sizeof *v;
  progress(k, -3);
  if (opt.device) /* on the stream: a pageable cudaMemcpy may still be in flight on return */
    CK(cudaMemcpyAsync(k->sbuf, v, bytes, cudaMemcpyHostToDevice, k->stream));
  else
    memcpy(k->sbuf, v, bytes);
  ncclResult_t res =
      ncclAllReduce(k->sbuf, k->rbuf, (size_t)len, ncclInt64, ncclSum, k->comm, k->stream);
  if (res != ncclSuccess)
    die("rank %d: the final AllReduce: %s: %s", k->rank, ncclGetErrorString(res),
        last_error(k->comm));
  if (opt.device) {
    CK(cudaStreamSynchronize(k->stream));
    CK(cudaMemcpy(v, k->rbuf, bytes, cudaMemcpyDeviceToHost));
  } else {
    memcpy(v, k->rbuf, bytes);
  }
  progress(k, -1);
}

static void tally_allreduce(struct rank* k, struct tally* t) {
  long long v[3 * MX_NCOLLS];
  for (int c = 0; c < MX_NCOLLS; c++) {
    v[c] = k->rank == 0 ? k->ncase[c] : 0;
    v[MX_NCOLLS + c] = k->nfail[c];
    v[2 * MX_NCOLLS + c] = k->unsupported[c];
  }
  sum_over_ranks(k, v, 3 * MX_NCOLLS);
  for (int c = 0; c < MX_NCOLLS; c++) {
    t->ncase[c] = v[c];
    t->nfail[c] = v[MX_NCOLLS + c];
    t->unsup[c] = v[2 * MX_NCOLLS + c];
  }
}

/* The exit status of a tally; with `print`, the summary too. */
static int summary(const struct tally* t, const double* secs, double total_s, int print) {
  long long cases_run = 0, fails = 0;
  int bad = 0;
  char skipped[256] = "";
  for (int c = 0; c < MX_NCOLLS; c++) {
    if (!(opt.colls & (1u << c))) continue;
    cases_run += t->ncase[c];
    fails += t->nfail[c];
    if (t->unsup[c]) {
      const char* m = unsup_msg[c][0] ? unsup_msg[c] : "(reported by another rank)";
      size_t l = strlen(skipped);
      snprintf(skipped + l, sizeof skipped - l, "%s%s", l ? ", " : "", coll_names[c]);
      if (opt.allow_unsupported) {
        if (print)
          printf("SKIP %s: unsupported here after %lld cases: %s\n", coll_names[c], t->ncase[c], m);
      } else {
        bad = 1;
        if (print)
          printf("FAIL %s: unsupported (ncclInvalidUsage) after %lld cases: %s\n", coll_names[c],
                 t->ncase[c], m);
      }
    }
    if (!print) continue;
    if (t->nfail[c])
      printf("FAIL %s: %lld cases, %lld failed (case, rank) checks (%.1f s)\n", coll_names[c],
             t->ncase[c], t->nfail[c], secs[c]);
    else if (!t->unsup[c])
      printf("PASS %s: %lld cases (%.1f s)\n", coll_names[c], t->ncase[c], secs[c]);
  }
  bad |= fails > 0 || cases_run == 0;
  if (print)
    printf("%s matrix mode=%s n=%d (%lld cases%s%s%s%s, %.1f s)\n", bad ? "FAIL" : "PASS",
           mode_names[opt.mode], opt.n, cases_run, fails ? ", failures" : "",
           opt.graph ? ", CUDA graphs" : "", *skipped ? "; unsupported here: " : "", skipped,
           total_s);
  return bad ? 1 : 0;
}

/* ---- modes ---- */

static ncclUniqueId shared_id; /* mode threads: made before the threads start */
/* Modes threads, procs with --threads: the rank-threads allocate (which may wait for the whole
 * GPU, so never while another's kernel waits) before any of them runs a case. */
static pthread_barrier_t threads_ready;

static void* thread_main(void* arg) {
  struct rank* k = arg;
  set_device(k);
  progress(k, -2);
  ncclResult_t res = ncclCommInitRank(&k->comm, opt.n, shared_id, k->rank);
  if (res != ncclSuccess) init_failed(res, "ncclCommInitRank", k->rank);
  setup_rank(k);
  pthread_barrier_wait(&threads_ready);
  progress(k, -1);
  run_one(k);
  teardown_rank(k);
  return NULL;
}

/* Mode procs with --threads T: the process's rank-threads. Each runs its cases and takes part
 * in the AllReduce of the tallies; then they wait (hybrid_gate) until the main thread printed the
 * summary, and free their comms after a last AllReduce, so that no process exits before rank 0
 * has printed. */
static pthread_barrier_t hybrid_gate;
static struct tally* hybrid_tally;

static void* hybrid_main(void* arg) {
  struct rank* k = arg;
  set_device(k);
  progress(k, -2);
  ncclResult_t res = ncclCommInitRank(&k->comm, opt.n, shared_id, k->rank);
  if (res != ncclSuccess) init_failed(res, "ncclCommInitRank", k->rank);
  setup_rank(k);
  pthread_barrier_wait(&threads_ready);
  progress(k, -1);
  run_one(k);
  tally_allreduce(k, &hybrid_tally[k - ranks]);
  pthread_barrier_wait(&hybrid_gate); /* the tallies are in */
  pthread_barrier_wait(&hybrid_gate); /* the summary is printed */
  long long one = 1;
  sum_over_ranks(k, &one, 1);
  teardown_rank(k);
  return NULL;
}

static pthread_t hybrid_th[MX_MAXRANKS];

/* Starts the rank-threads and returns once every one has the tallies of the job in t. */
static void hybrid_start(struct tally* t) {
  hybrid_tally = calloc((size_t)nlocal, sizeof *hybrid_tally);
  if (!hybrid_tally || pthread_barrier_init(&hybrid_gate, NULL, (unsigned)nlocal + 1) != 0 ||
      pthread_barrier_init(&threads_ready, NULL, (unsigned)nlocal) != 0)
    die("cannot set up %d rank-threads", nlocal);
  ncclResult_t res = ncclGetUniqueId(&shared_id); /* NCCL_COMM_ID's: the job's */
  if (res != ncclSuccess) init_failed(res, "ncclGetUniqueId", ranks[0].rank);
  for (int r = 0; r < nlocal; r++)
    if (pthread_create(&hybrid_th[r], NULL, hybrid_main, &ranks[r]) != 0)
      die("cannot start the thread of rank %d", ranks[r].rank);
  pthread_barrier_wait(&hybrid_gate);
  *t = hybrid_tally[0]; /* every rank-thread holds the same sums over the job */
}

/* After the summary: the rank-threads free their comms and end. */
static void hybrid_end(void) {
  pthread_barrier_wait(&hybrid_gate);
  for (int r = 0; r < nlocal; r++) pthread_join(hybrid_th[r], NULL);
  free(hybrid_tally);
  pthread_barrier_destroy(&hybrid_gate);
  pthread_barrier_destroy(&threads_ready);
}

static int run_mode(void) {
  double t0 = now_s();
  struct tally t;
  memset(&t, 0, sizeof t);
  pthread_t wd;
  if (pthread_create(&wd, NULL, watchdog, NULL) != 0) die("cannot start the watchdog thread");
  if (opt.mode == MODE_ALL) {
    ncclComm_t comms[MX_MAXRANKS];
    int devs[MX_MAXRANKS];
    for (int r = 0; r < nlocal; r++) devs[r] = ranks[r].dev;
    progress(&ranks[0], -2);
    ncclResult_t res = ncclCommInitAll(comms, opt.n, opt.device ? devs : NULL);
    if (res != ncclSuccess) init_failed(res, "ncclCommInitAll", 0);
    for (int r = 0; r < nlocal; r++) {
      ranks[r].comm = comms[r];
      setup_rank(&ranks[r]);
    }
    progress(&ranks[0], -1);
    run_all();
    for (int r = 0; r < nlocal; r++) tally_add(&t, &ranks[r], r == 0);
  } else if (opt.mode == MODE_THREADS) {
    pthread_t th[MX_MAXRANKS];
    ncclResult_t res = ncclGetUniqueId(&shared_id);
    if (res != ncclSuccess) init_failed(res, "ncclGetUniqueId", 0);
    if (pthread_barrier_init(&threads_ready, NULL, (unsigned)nlocal) != 0)
      die("cannot set up %d rank-threads", nlocal);
    for (int r = 0; r < nlocal; r++)
      if (pthread_create(&th[r], NULL, thread_main, &ranks[r]) != 0)
        die("cannot start the thread of rank %d", r);
    for (int r = 0; r < nlocal; r++) pthread_join(th[r], NULL);
    pthread_barrier_destroy(&threads_ready);
    for (int r = 0; r < nlocal; r++) tally_add(&t, &ranks[r], r == 0);
  } else if (opt.threads > 1) {
    hybrid_start(&t);
  } else {
    struct rank* k = &ranks[0];
    set_device(k);
    progress(k, -2);
    ncclResult_t res = ncclGetUniqueId(&shared_id);
    if (res != ncclSuccess) init_failed(res, "ncclGetUniqueId", k->rank);
    res = ncclCommInitRank(&k->comm, opt.n, shared_id, k->rank);
    if (res != ncclSuccess) init_failed(res, "ncclCommInitRank", k->rank);
    setup_rank(k);
    progress(k, -1);
    run_one(k);
    tally_allreduce(k, &t);
  }
  int status = summary(&t, ranks[0].secs, now_s() - t0, ranks[0].rank == 0);
  if (opt.mode == MODE_PROCS && opt.threads > 1) {
    hybrid_end();
  } else {
    if (opt.mode == MODE_PROCS) { /* no rank exits (monelrun would stop rank 0) before it printed */
      long long one = 1;
      sum_over_ranks(&ranks[0], &one, 1);
    }
    if (opt.mode != MODE_THREADS)
      for (int r = 0; r < nlocal; r++) teardown_rank(&ranks[r]);
  }
  pthread_mutex_lock(&wd_lock);
  wd_stop = 1;
  pthread_cond_signal(&wd_cond);
  pthread_mutex_unlock(&wd_lock);
  pthread_join(wd, NULL);
  return status;
}

/* ---- options ---- */

static void usage(FILE* f) {
  fprintf(f, "usage: matrix [--mode all|threads|procs] [-n N] [--colls LIST] [--dtypes LIST]\n"
             "              [--ops LIST] [--counts LIST] [--large N] [--quick] [--every-root]\n"
             "              [--graph]\n"
             "              [--capture global|thread|relaxed] [--allow-unsupported]\n"
             "              [--timeout SECONDS] [--share-gpus] [--threads T] [-v]\n"
             "  --threads T (mode procs): T rank-threads per process, all on its GPU\n"
             "  --share-gpus: more ranks than GPUs share them, rank r (procs: local rank r)\n"
             "          on GPU r mod count (Monel allows it; NCCL does not support it)\n"
             "  --mode procs runs under monelrun: monelrun -n N matrix --mode procs\n"
             "  colls:  allreduce broadcast reduce allgather reducescatter alltoall alltoallv\n"
             "          gather scatter sendrecv (or all)\n"
             "  dtypes: int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 f8e4m3\n"
             "          f8e5m2 (or all)\n"
             "  ops:    sum prod max min avg premul premul_dev (or all)\n"
             "  counts: sizes like 0,1,1023,64M+3 (default; --large sets the last one)\n"
             "  rooted collectives run every root up to 1023 elements, roots 0 and n-1 above\n"
             "  (every root everywhere with --every-root)\n");
}

/* "123", "64M", "64M+3", "1K", "2G". */
static int parse_size(const char* s, size_t* out) {
  char* end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s) return -1;
  if (*end == 'K' || *end == 'k')
    v <<= 10, end++;
  else if (*end == 'M' || *end == 'm')
    v <<= 20, end++;
  else if (*end == 'G' || *end == 'g')
    v <<= 30, end++;
  if (*end == '+') {
    const char* p = end + 1;
    unsigned long long add = strtoull(p, &end, 10);
    if (end == p) return -1;
    v += add;
  }
  if (*end) return -1;
  *out = (size_t)v;
  return 0;
}

static int name_index(const char* w, size_t len, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (names[i] && strlen(names[i]) == len && strncmp(names[i], w, len) == 0) return i;
  return -1;
}

/* A comma list of names into a bit mask ("all": every one). */
static unsigned parse_names(const char* list, const char* const* names, int n, const char* what) {
  unsigned mask = 0;
  for (const char* p = list; *p;) {
    const char* e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 3 && strncmp(p, "all", 3) == 0) {
      mask |= (1u << n) - 1;
    } else {
      int i = name_index(p, len, names, n);
      if (i < 0) {
        fprintf(stderr, "matrix: unknown %s \"%.*s\"\n", what, (int)len, p);
        usage(stderr);
        exit(2);
      }
      mask |= 1u << i;
    }
    p += len + (e != NULL);
  }
  return mask;
}

static void parse(int argc, char** argv) {
  static const struct option longopts[] = {{"mode", required_argument, 0, 'm'},
                                           {"colls", required_argument, 0, 'c'},
                                           {"dtypes", required_argument, 0, 'd'},
                                           {"ops", required_argument, 0, 'o'},
                                           {"counts", required_argument, 0, 'C'},
                                           {"large", required_argument, 0, 'L'},
                                           {"quick", no_argument, 0, 'q'},
                                           {"every-root", no_argument, 0, 'R'},
                                           {"graph", no_argument, 0, 'g'},
                                           {"capture", required_argument, 0, 'G'},
                                           {"allow-unsupported", no_argument, 0, 'u'},
                                           {"share-gpus", no_argument, NULL, 'S'},
                                           {"threads", required_argument, 0, 'T'},
                                           {"timeout", required_argument, 0, 't'},
                                           {"plant-error", no_argument, 0, 'P'},
                                           {"verbose", no_argument, 0, 'v'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  const char* dtype_names[ncclNumTypes];
  for (int i = 0; i < ncclNumTypes; i++) dtype_names[i] = dtype_name((ncclDataType_t)i);
  int given_dtypes = 0, given_ops = 0, counts_given = 0, ch;
  opt.colls = (1u << MX_NCOLLS) - 1;
  opt.large = ((size_t)64 << 20) + 3;
  opt.timeout = 120;
  opt.capture = cudaStreamCaptureModeThreadLocal;
  while ((ch = getopt_long(argc, argv, "n:vh", longopts, NULL)) != -1) {
    switch (ch) {
    case 'm': {
      int m = name_index(optarg, strlen(optarg), mode_names, 3);
      if (m < 0) {
        fprintf(stderr, "matrix: unknown mode \"%s\"\n", optarg);
        exit(2);
      }
      opt.mode = m;
      break;
    }
    case 'n':
      opt.n = atoi(optarg);
      break;
    case 'c':
      opt.colls = parse_names(optarg, coll_names, MX_NCOLLS, "collective");
      break;
    case 'd':
      opt.dtypes = parse_names(optarg, dtype_names, ncclNumTypes, "dtype");
      given_dtypes = 1;
      break;
    case 'o':
      opt.ops = parse_names(optarg, op_names, MX_NOPS, "op");
      given_ops = 1;
      break;
    case 'C': {
      opt.ncounts = 0, counts_given = 1;
      char* list = strdup(optarg);
      for (char* w = strtok(list, ","); w; w = strtok(NULL, ",")) {
        if (opt.ncounts == 8 || parse_size(w, &opt.counts[opt.ncounts++]) != 0) {
          fprintf(stderr, "matrix: bad --counts \"%s\" (at most 8 sizes)\n", optarg);
          exit(2);
        }
      }
      free(list);
      break;
    }
    case 'L':
      if (parse_size(optarg, &opt.large) != 0) {
        fprintf(stderr, "matrix: bad --large \"%s\"\n", optarg);
        exit(2);
      }
      break;
    case 'q':
      opt.quick = 1;
      break;
    case 'R':
      opt.every_root = 1;
      break;
    case 'g':
      opt.graph = 1;
      break;
    case 'G':
      if (strcmp(optarg, "global") == 0) {
        opt.capture = cudaStreamCaptureModeGlobal;
      } else if (strcmp(optarg, "relaxed") == 0) {
        opt.capture = cudaStreamCaptureModeRelaxed;
      } else if (strcmp(optarg, "thread") == 0) {
        opt.capture = cudaStreamCaptureModeThreadLocal;
      } else {
        fprintf(stderr, "matrix: --capture takes global, thread or relaxed\n");
        exit(2);
      }
      break;
    case 'u':
      opt.allow_unsupported = 1;
      break;
    case 'T':
      opt.threads = atoi(optarg);
      break;
    case 'S':
      opt.share_gpus = 1;
      break;
    case 't':
      opt.timeout = atoi(optarg);
      break;
    case 'P':
      opt.plant = 1;
      break;
    case 'v':
      opt.verbose = 1;
      break;
    case 'h':
      usage(stdout);
      exit(0);
    default:
      usage(stderr);
      exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "matrix: unexpected argument \"%s\"\n", argv[optind]);
    usage(stderr);
    exit(2);
  }
  if (!counts_given) {
    size_t def[4] = {0, 1, 1023, opt.large};
    memcpy(opt.counts, def, sizeof def);
    opt.ncounts = 4;
  }
  /* --quick: 1-, 2-, 4- and 8-byte types, integer and floating, and four ops. */
  if (!given_dtypes)
    opt.dtypes = opt.quick ? 1u << ncclInt8 | 1u << ncclInt64 | 1u << ncclFloat16 |
                                 1u << ncclFloat32 | 1u << ncclBfloat16 | 1u << ncclFloat8e5m2
                           : (1u << ncclNumTypes) - 1;
  if (!given_ops)
    opt.ops = opt.quick ? 1u << MX_SUM | 1u << MX_MAX | 1u << MX_AVG | 1u << MX_PREMUL_DEV
                        : (1u << MX_NOPS) - 1;
  if (opt.timeout <= 0) opt.timeout = 120;
}

static int env_int(const char* name, int def) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : def;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  parse(argc, argv);
  const char* engine = getenv("MONEL_ENGINE");
  int ngpus = 0;
  if (!(engine && strcmp(engine, "cpu") == 0) && cudaGetDeviceCount(&ngpus) != cudaSuccess)
    ngpus = 0;
  (void)cudaGetLastError();
  opt.device = ngpus > 0;
  int first_rank = 0, local_dev = 0;
  if (opt.mode == MODE_PROCS) {
    int np = env_int("MONEL_NRANKS", 0), pr = env_int("MONEL_RANK", -1);
    if (np < 1 || pr < 0 || pr >= np) {
      fprintf(stderr, "matrix: --mode procs runs under monelrun (MONEL_RANK and MONEL_NRANKS "
                      "unset): monelrun -n N matrix --mode procs\n");
      return 2;
    }
    if (opt.threads < 1) opt.threads = 1;
    if (opt.n && opt.n != np * opt.threads) {
      fprintf(stderr, "matrix: -n %d differs from MONEL_NRANKS=%d x --threads %d\n", opt.n, np,
              opt.threads);
      return 2;
    }
    if (np > 1 && !getenv("NCCL_COMM_ID")) {
      fprintf(stderr, "matrix: several processes need NCCL_COMM_ID (monelrun sets it)\n");
      return 2;
    }
    opt.n = np * opt.threads, first_rank = pr * opt.threads, nlocal = opt.threads;
    local_dev = env_int("MONEL_LOCAL_RANK", pr);
    if (opt.share_gpus && ngpus > 0) local_dev %= ngpus;
    if (opt.device && local_dev >= ngpus) {
      printf("FAIL matrix mode=procs n=%d: local rank %d has no GPU (%d here)\n", np, local_dev,
             ngpus);
      return 1;
    }
  } else {
    if (opt.n == 0) opt.n = opt.device ? (ngpus < 8 ? ngpus : 8) : 4;
    nlocal = opt.n;
    if (opt.device && opt.n > ngpus && !opt.share_gpus) {
      printf("SKIP matrix mode=%s n=%d: only %d GPUs here\n", mode_names[opt.mode], opt.n, ngpus);
      return 0;
    }
  }
  if (opt.n < 1 || opt.n > MX_MAXRANKS || nlocal > MX_MAXRANKS) {
    fprintf(stderr, "matrix: -n must be 1..%d\n", MX_MAXRANKS);
    return 2;
  }
  if (opt.n > MX_ALLTYPES_RANKS && (opt.dtypes & ~MX_WIDE_TYPES)) { /* matrix.h */
    opt.dtypes &= MX_WIDE_TYPES;
    if (!opt.dtypes) opt.dtypes = 1u << ncclInt32 | 1u << ncclFloat32;
    if (first_rank == 0)
      printf(
          "matrix: %d ranks: the 32- and 64-bit types only (the narrow ones are exact up to %d)\n",
          opt.n, MX_ALLTYPES_RANKS);
  }
  if (opt.graph && !opt.device) {
    if (first_rank == 0)
      printf("SKIP matrix mode=%s n=%d --graph: CUDA graphs need GPUs (CPU engine here)\n",
             mode_names[opt.mode], opt.n);
    return 0;
  }
  p_alltoallv = (alltoallv_fn)dlsym(RTLD_DEFAULT, "ncclAlltoAllv");
  p_engine = (engine_fn)dlsym(RTLD_DEFAULT, "ncclMonelCommGetEngine");
  if (!p_alltoallv && (opt.colls & (1u << MX_ALLTOALLV))) {
    opt.colls &= ~(1u << MX_ALLTOALLV);
    if (first_rank == 0)
      printf("SKIP alltoallv: the loaded libnccl.so.2 has no ncclAlltoAllv (not Monel)\n");
  }
  build_cases();
  ranks = calloc((size_t)nlocal, sizeof *ranks);
  if (!ranks) die("out of memory");
  for (int r = 0; r < nlocal; r++) {
    ranks[r].rank = first_rank + r;
    ranks[r].dev = opt.mode == MODE_PROCS ? local_dev : opt.share_gpus && ngpus > 0 ? r % ngpus : r;
    atomic_init(&ranks[r].cur, -1);
    atomic_init(&ranks[r].since_ms, 0);
  }
  if (first_rank == 0)
    printf("matrix mode=%s n=%d on %s: %d cases, counts", mode_names[opt.mode], opt.n,
           opt.device ? "GPUs" : "the CPU engine (host memory)", ncases);
  for (int i = 0; first_rank == 0 && i < opt.ncounts; i++) printf(" %zu", opt.counts[i]);
  if (first_rank == 0) printf("%s%s\n", opt.quick ? ", quick" : "", opt.graph ? ", graph" : "");
  int status = run_mode();
  free(ranks);
  free(cases);
  return status;
}
