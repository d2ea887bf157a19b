/* SPDX-License-Identifier: BSD-3-Clause */
/* The GPUDirect RDMA path of proxy/fifo_net.c, watched from the network's side (included by
 * test_fifo_net.c, whose wrapped network this extends). The kernels' slots live apart from their
 * counters (spec.slots, as device memory would), and are registered as NET_PTR_CUDA:
 *  - over a network that cannot register CUDA memory (Socket, UCX here) the wrapper pretends
 *    it can: it advertises NET_PTR_CUDA, registers the slots as host memory underneath, and
 *    answers iflush with flush requests of its own that complete on their third test;
 *  - over the test plugin with MONEL_TEST_PLUGIN_CUDA=1 (FIFO_NET_PLUGIN=1) everything reaches
 *    the plugin through the adapter: its CUDA registrations and its iflush (done on the third
 *    test too).
 * The proxy must publish a receive's tail only after its flush completed. The wrapper keeps,
 * per receive comm, how many receives are visible (completed with no bytes, or completed and
 * flushed, in order) and checks on every call the proxy makes on that comm that the FIFO's tail
 * is not ahead of it: a tail published before its flush is caught at the flush call itself. The
 * threads playing the kernels check it too for each step they take, every receive with bytes is
 * flushed exactly once (no flush of an empty one), and flushes go to CUDA registrations only. */

static int gdr_mode; /* the test runs with the slots apart, registered as CUDA memory */
static int gdr_fake; /* ... and the wrapper plays the CUDA registrations and the flushes */

enum { GDR_MAXC = 16, GDR_RING = 64 };
struct gdr_comm {
  void* comm; /* a receive comm, once its slots were registered */
  char* slots;
  const uint64_t* tail;
  uint64_t completed, visible, nonzero, nonzero_visible, flushes;
  unsigned char zero[GDR_RING]; /* receive k (mod GDR_RING) had no bytes */
};
static struct gdr_comm gdr_comms[GDR_MAXC];
static struct {
  char *slots, *fifo;
  int is_send;
} gdr_fifos[GDR_MAXC];                                   /* the test's FIFOs: slots -> counters */
static void* gdr_flush_req[NET_MAX_REQUESTS * GDR_MAXC]; /* flushes in flight */
static void* gdr_flush_comm[NET_MAX_REQUESTS * GDR_MAXC];
struct gdr_fake_req {
  int tests;
};

static void gdr_note_fifo(char* slots, char* fifo, int is_send) {
  for (int i = 0; i < GDR_MAXC; i++)
    if (gdr_fifos[i].slots == NULL) {
      gdr_fifos[i].slots = slots, gdr_fifos[i].fifo = fifo, gdr_fifos[i].is_send = is_send;
      return;
    }
  CHECK(0);
}

/* Under count_lock. */
static struct gdr_comm* gdr_of(void* comm) {
  for (int i = 0; i < GDR_MAXC; i++)
    if (gdr_comms[i].comm == comm && comm != NULL) return &gdr_comms[i];
  return NULL;
}

/* Under count_lock: the receives become visible in order, each empty one at once, each other
 * one once a flush completed; the tail may never be ahead. */
static void gdr_advance(struct gdr_comm* g) {
  while (g->visible < g->completed) {
    if (g->zero[g->visible % GDR_RING]) {
      g->visible++;
    } else if (g->nonzero_visible < g->flushes) {
      g->nonzero_visible++, g->visible++;
    } else {
      break;
    }
  }
  uint64_t tail = __atomic_load_n(g->tail, __ATOMIC_ACQUIRE);
  if (tail > g->visible) {
    fprintf(stderr, "a tail of %llu was published with %llu receives flushed or empty\n",
            (unsigned long long)tail, (unsigned long long)g->visible);
    exit(1);
  }
}

static void gdr_check(void* comm) {
  pthread_mutex_lock(&count_lock);
  struct gdr_comm* g = gdr_of(comm);
  if (g) gdr_advance(g);
  pthread_mutex_unlock(&count_lock);
}

/* A receive of comm completed with size bytes. */
static void gdr_received(void* comm, size_t size) {
  pthread_mutex_lock(&count_lock);
  struct gdr_comm* g = gdr_of(comm);
  if (g) {
    g->zero[g->completed++ % GDR_RING] = size == 0;
    g->nonzero += size > 0;
    gdr_advance(g);
  }
  pthread_mutex_unlock(&count_lock);
}

/* The thread playing a receiving kernel saw tail >= step + 1 on the FIFO with these slots. */
static void gdr_kernel_saw(const char* slots, uint64_t step) {
  int seen = 0;
  pthread_mutex_lock(&count_lock);
  for (int i = 0; i < GDR_MAXC; i++)
    if (gdr_comms[i].comm != NULL && gdr_comms[i].slots == slots) {
      gdr_advance(&gdr_comms[i]);
      CHECK(gdr_comms[i].visible >= step + 1);
      seen = 1;
    }
  pthread_mutex_unlock(&count_lock);
  CHECK(seen);
}

static ncclResult_t g_props(int dev, struct net_props* p) {
  ncclResult_t res = base->get_properties(dev, p);
  if (res == ncclSuccess && gdr_fake) p->ptr_support |= NET_PTR_CUDA;
  return res;
}

static ncclResult_t g_reg_mr(void* comm, void* data, size_t size, int type, void** mh) {
  CHECK_EQ(type, NET_PTR_CUDA); /* gdr_mode: every registration is of slots apart */
  ncclResult_t res = base->reg_mr(comm, data, size, gdr_fake ? NET_PTR_HOST : type, mh);
  pthread_mutex_lock(&count_lock);
  for (int i = 0; i < GDR_MAXC; i++)
    if (gdr_fifos[i].slots == data && res == ncclSuccess && !gdr_fifos[i].is_send) {
      struct gdr_comm* g = NULL;
      for (int k = 0; k < GDR_MAXC && g == NULL; k++)
        if (gdr_comms[k].comm == NULL) g = &gdr_comms[k];
      CHECK(g != NULL);
      memset(g, 0, sizeof *g);
      g->comm = comm, g->slots = data;
      g->tail = (const uint64_t*)(gdr_fifos[i].fifo + GPU_FIFO_TAIL);
    }
  pthread_mutex_unlock(&count_lock);
  return res;
}

static ncclResult_t g_iflush(void* comm, int n, void** data, size_t* sizes, void** mh, void** req) {
  CHECK_EQ(n, 1);
  CHECK(sizes[0] > 0); /* an empty receive needs no flush */
  gdr_check(comm);
  ncclResult_t res = ncclSuccess;
  if (gdr_fake) {
    *req = calloc(1, sizeof(struct gdr_fake_req));
    CHECK(*req != NULL);
  } else {
    res = base->iflush(comm, n, data, sizes, mh, req);
  }
  if (res == ncclSuccess && *req == NULL) { /* done at once */
    pthread_mutex_lock(&count_lock);
    struct gdr_comm* g = gdr_of(comm);
    if (g) g->flushes++, gdr_advance(g);
    pthread_mutex_unlock(&count_lock);
  } else if (res == ncclSuccess) {
    pthread_mutex_lock(&count_lock);
    int k = 0;
    while (k < NET_MAX_REQUESTS * GDR_MAXC && gdr_flush_req[k] != NULL) k++;
    CHECK(k < NET_MAX_REQUESTS * GDR_MAXC);
    gdr_flush_req[k] = *req, gdr_flush_comm[k] = comm;
    pthread_mutex_unlock(&count_lock);
  }
  return res;
}

/* 1 when req is a flush (then tested here). */
static int gdr_test(void* req, int* done, size_t* sizes, ncclResult_t* res) {
  int k = 0;
  pthread_mutex_lock(&count_lock);
  while (k < NET_MAX_REQUESTS * GDR_MAXC && gdr_flush_req[k] != req) k++;
  pthread_mutex_unlock(&count_lock);
  if (k == NET_MAX_REQUESTS * GDR_MAXC) return 0;
  void* comm = gdr_flush_comm[k];
  gdr_check(comm);
  if (gdr_fake) {
    struct gdr_fake_req* f = req;
    *done = ++f->tests >= 3;
    *res = ncclSuccess;
    if (*done) free(f);
  } else {
    *res = base->test(req, done, sizes);
  }
  if (*res != ncclSuccess || *done) {
    pthread_mutex_lock(&count_lock);
    gdr_flush_req[k] = gdr_flush_comm[k] = NULL;
    struct gdr_comm* g = gdr_of(comm);
    if (g && *res == ncclSuccess) g->flushes++, gdr_advance(g);
    pthread_mutex_unlock(&count_lock);
  }
  return 1;
}

/* At close: every receive with bytes was flushed once, and nothing else was. */
static void gdr_closing(void* comm) {
  pthread_mutex_lock(&count_lock);
  struct gdr_comm* g = gdr_of(comm);
  if (g != NULL && !rfailed[comm_slot(comm)]) {
    if (g->flushes != g->nonzero)
      fprintf(stderr, "%llu flushes for %llu receives with bytes\n", (unsigned long long)g->flushes,
              (unsigned long long)g->nonzero);
    CHECK_EQ(g->flushes, g->nonzero);
    CHECK(g->nonzero > 0);
  }
  if (g != NULL) g->comm = NULL;
  pthread_mutex_unlock(&count_lock);
}
