/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to src/boot: the handle header shared by the TCP and in-process bootstraps, the
 * vtable that boot.c dispatches through, and the layout of the unique id. */
#ifndef MONEL_BOOT_BOOT_IMPL_H
#define MONEL_BOOT_BOOT_IMPL_H
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "boot/boot.h"
#include "os/auth.h"
#include "os/pending.h"
#include "os/socket.h"

#define BOOT_MAGIC_TCP    0x4d4e4c42u /* "MNLB" */
#define BOOT_MAGIC_LOCAL  0x4d4e4c4cu /* "MNLL" */
#define BOOT_FLAG_COMM_ID 0x1u        /* address came from NCCL_COMM_ID: rank 0 runs the root */

/* Message kinds: user point-to-point messages and the bootstrap's own collectives never match. */
enum boot_kind { BOOT_KIND_USER = 0, BOOT_KIND_ALLGATHER = 1 };

/* The 128 bytes of an ncclUniqueId. */
struct boot_id {
  uint32_t magic;
  uint32_t flags;
  uint64_t secret;
  union sock_addr root;              /* TCP */
  void* shared;                      /* in-process: struct local_shared* */
  int32_t nranks;                    /* in-process */
  unsigned char key[AUTH_KEY_BYTES]; /* the job's secret: random, or from MONEL_JOB_SECRET */
};
_Static_assert(sizeof(struct boot_id) <= sizeof(ncclUniqueId), "boot id must fit in 128 bytes");

struct boot_ops {
  ncclResult_t (*send)(struct boot* b, int peer, int kind, int tag, const void* data, size_t size);
  ncclResult_t (*recv)(struct boot* b, int peer, int kind, int tag, void* data, size_t size);
  void (*abort)(struct boot* b);
  void (*free)(struct boot* b);
};

/* First member of each implementation's handle. */
struct boot {
  const struct boot_ops* ops;
  int rank;
  int nranks;
  unsigned char key[AUTH_KEY_BYTES]; /* the id's: connections of the job prove it (os/auth.h) */
};

/* Rendezvous wire format (boot_root.c <-> boot_socket.c). A rank sends a u32 length, then
 * struct boot_hello; the root answers struct boot_reply followed by nranks addresses (status
 * BOOT_REPLY_OK) or text_len bytes naming the missing ranks (BOOT_REPLY_TIMEOUT). */
struct boot_hello {
  uint32_t magic;
  uint32_t pad;
  uint64_t secret;
  int32_t rank;
  int32_t nranks;
  union sock_addr addr; /* where this rank listens for its peers */
};
enum { BOOT_REPLY_OK = 0, BOOT_REPLY_TIMEOUT = 1 };
struct boot_reply {
  uint32_t magic;
  uint32_t status;
  uint32_t nranks;
  uint32_t text_len;
};
#define BOOT_REPLY_TEXT_MAX 4096

/* The bootstrap's listeners (the root's and each rank's) read the handshake and hello of every
 * new connection at once (os/pending.h); one still unfinished after this long is dropped. */
#define BOOT_HELLO_WAIT_S 30.0

/* The root listener: serves one job (collects nranks hellos, answers them) and exits, or exits
 * when MONEL_BOOT_TIMEOUT passes. *addr: where to listen (port 0 = ephemeral), gets the port.
 * registered: kept in a process-wide list so that boot_root_release() can join it. */
struct boot_root;
ncclResult_t boot_root_start(union sock_addr* addr, uint64_t secret,
                             const unsigned char key[AUTH_KEY_BYTES], int registered,
                             struct boot_root** out);
/* Wait for the thread to finish and free it; accepts NULL. */
void boot_root_join(struct boot_root* root);
/* Join and free the registered roots of this process that carry `secret`. */
void boot_root_release(uint64_t secret);
/* Join and free the registered roots of this process that have finished. */
void boot_root_reap(void);

ncclResult_t boot_socket_init(const struct boot_id* id, int rank, int nranks, struct boot** out);
ncclResult_t boot_local_init(const struct boot_id* id, int rank, int nranks, struct boot** out);

/* A received message of got bytes into the caller's buffer of size bytes: both implementations'
 * rule (the sizes must agree: the ranks speak one protocol), then the message is freed. */
ncclResult_t boot_msg_deliver(const struct boot* base, int peer, int tag, void* msg,
                              const void* got, size_t got_size, void* data, size_t size);

/* ---- The TCP bootstrap (boot_socket.c: the handle and the rendezvous; boot_conn.c: a rank's
 * connections to its peers and the progress thread; boot_msg.c: messages, their queue, send and
 * receive). */
/* A rank's table of incoming connections still in their handshake and hello holds one per peer
 * and this many more (os/pending.h: when it is full, the unfinished one that sent the fewest bytes
 * goes, so idle strangers cannot keep a peer out). */
#define INCOMING_SPARE 64
#define ABORTED(b)     __atomic_load_n(&(b)->aborted, __ATOMIC_SEQ_CST)

/* A message that arrived (or was sent to this rank itself), waiting for its receive. */
struct sock_msg {
  struct sock_msg* next;
  int src, kind, tag;
  size_t size;
  char data[];
};

/* This rank's state of one peer rank. */
struct peer {
  pthread_mutex_t send_mu; /* serializes connect + writes on out_fd */
  int out_fd;              /* written under send_mu and mu; read by the progress thread under mu */
  int in_fd;               /* owned by the progress thread; published under mu */
  int out_eof;             /* progress thread: the peer closed our outgoing connection ... */
  double out_eof_at;       /* ... at this time */
  enum sock_err out_why;   /* ... this way */
  int refused;             /* atomic: connecting to the peer failed (it is gone) ... */
  enum sock_err refused_why; /* ... this way (written before refused) */
  int dead;                  /* under mu */
  enum sock_err why;
};

/* What a rank sends first on its connection to a peer, after the handshake. */
struct peer_hello {
  uint32_t magic;
  int32_t rank;
  uint64_t secret;
};

_Static_assert(sizeof(struct peer_hello) <= PEND_HELLO_MAX, "a peer's hello fits a pending entry");

/* A rank's TCP bootstrap (its struct boot). */
struct boot_sock {
  struct boot base;
  uint64_t secret;
  int64_t timeout;
  int listen_fd;
  int wake_fd;
  union sock_addr* addrs;
  struct peer* peers;
  struct pend_set inc; /* progress thread only: incoming connections still in their hello */
  char inc_where[32];  /* names this rank's listener in the log */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct sock_msg *head, *tail;
  volatile int aborted;
  atomic_int stop;
  int progress_started;
  pthread_t progress;
  struct boot_root* root; /* NCCL_COMM_ID: rank 0 runs the root */
};

/* boot_conn.c */
void boot_sock_wake(struct boot_sock* b); /* makes the progress thread poll again */
void boot_sock_peer_dead(struct boot_sock* b, int peer, enum sock_err why);
void boot_sock_peer_str(struct boot_sock* b, int p, char* buf, size_t len);
ncclResult_t boot_sock_connect(struct boot_sock* b, int p, int quiet); /* with send_mu held */
void* boot_sock_progress(void* arg); /* the progress thread's body */
/* boot_msg.c */
void boot_sock_enqueue(struct boot_sock* b, struct sock_msg* m);
void boot_sock_read_msg(struct boot_sock* b, int p); /* progress thread: one from p's in_fd */
ncclResult_t boot_sock_send(struct boot* base, int p, int kind, int tag, const void* data,
                            size_t size);
ncclResult_t boot_sock_recv(struct boot* base, int p, int kind, int tag, void* data, size_t size);

#endif
