/* SPDX-License-Identifier: BSD-3-Clause */
/* The built-in TCP network's private parts, shared by net_tcp.c (devices, listen/connect/accept,
 * close) and net_tcp_io.c (registration, isend/irecv/test, helper threads, wait).
 *
 * A comm is one control socket plus D = NCCL_SOCKET_NTHREADS x NCCL_NSOCKS_PERTHREAD data
 * sockets, all to the same peer. Every message starts with a header on the control socket
 * {tag, check word, size}; a message of at most TCP_INLINE_MAX bytes follows its header there. A
 * larger one is cut into at most D pieces of at least TCP_CHUNK_MIN bytes that go, one each, over
 * consecutive data sockets (after the socket the previous large message ended on); both sides
 * compute the same cut from the size in the header, so pieces carry no header. Each data socket
 * keeps its pieces in message order, so a receiver reads a socket only once it matched the
 * message of its next piece. A receiver reads the control socket ahead of the message it needs
 * (TCP_READ_AHEAD bytes at most), so a small message costs one system call. Helper threads move
 * the pieces; the caller's thread moves control bytes inside isend/irecv/test. The helpers are
 * the device's, shared by every comm of the process on that device (two pools per network device,
 * one for receive comms and one for send comms, each growing by NCCL_SOCKET_NTHREADS threads for
 * each comm that moves large messages up to MONEL_SOCKET_POOL_MAX, from the cores each rank of
 * the machine has; started at a comm's first large message, ended with the last comm that used
 * them): a comm's data sockets go to
 * NCCL_SOCKET_NTHREADS different threads of the pool, NCCL_NSOCKS_PERTHREAD to each, so one
 * connection moves as many pieces at once as before, and a rank's threads do not grow with its
 * peers. A sender that closes after its last
 * message ends the control socket between messages: the receiver takes that as the end of the
 * stream, not a loss, and still completes the messages whose pieces are on their way.
 *
 * With a key (net.h), every socket starts with the handshake of os/auth.h before its hello: the
 * listener reads nothing else from a socket until the connector proved the key, closes one that
 * fails (the first from each address logged at WARN) or that has not finished its hello
 * TCP_STRANGER_S after it was accepted, and, with PENDING_MAX sockets waiting, drops the
 * unfinished one that sent the fewest bytes to take a new one (os/pending.h). Who may include:
 * net_tcp*.c only. */
#ifndef MONEL_TRANSPORT_NET_TCP_H
#define MONEL_TRANSPORT_NET_TCP_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "os/auth.h"
#include "os/socket.h"
#include "transport/net.h"

#define TCP_MAGIC      0x6d746370u /* "mtcp": handles and socket hellos */
#define TCP_MSG_CHECK  0x6d6d7367u /* "mmsg": in every message header */
#define TCP_MAX_SOCKS  64          /* data sockets per comm (threads x sockets per thread) */
#define TCP_MAX_RECVS  8           /* buffers one irecv may group */
#define TCP_INLINE_MAX (64 * 1024) /* messages up to this size travel on the control socket */
#define TCP_CHUNK_MIN  (64 * 1024) /* smallest piece of a message cut over data sockets */
#define TCP_READ_AHEAD (8 * 1024)  /* a receive comm's control bytes read beyond what it needs */
#define TCP_QUEUE      (NET_MAX_REQUESTS * TCP_MAX_RECVS) /* pieces waiting per data socket */
#define TCP_MAX_DEVS   16
/* Longest wait for an accepted socket's handshake and hello: as the bootstrap's, not the watch's
 * AUTH_STRANGER_S, since a rank that connects to every peer at once (an AlltoAll) makes all its
 * connections in one pass of its progress thread, and with many ranks per core a handshake then
 * takes seconds. A stranger keeps no rank out meanwhile: with PENDING_MAX sockets waiting, an
 * idle one gives its place (os/pending.h). */
#define TCP_STRANGER_S 30.0

/* What listen() writes into the NET_HANDLE_BYTES handle. */
struct tcp_handle {
  uint32_t magic;
  uint16_t nthreads, nsocks; /* the listener's choice; the connector follows it */
  uint64_t token;            /* a connection presenting another token is dropped */
  union sock_addr addr;
  void* stage; /* the connector's progress between its calls: a handle (net_handle.h) of kind
                * NET_KIND_CONNECTING, NULL at first; a made-up one is refused */
};
_Static_assert(sizeof(struct tcp_handle) <= NET_HANDLE_BYTES, "TCP handle too large");

/* The first bytes on every socket of a comm, connector -> listener. */
struct tcp_hello {
  uint32_t magic;
  uint32_t index; /* 0: control socket; 1..D: data sockets */
  uint64_t token;
  uint64_t conn_id; /* groups the sockets of one connection */
  uint16_t nthreads, nsocks;
  uint32_t pad;
};

struct tcp_msg_hdr {
  int32_t tag;
  uint32_t check;
  uint64_t size;
};

struct tcp_req;

struct tcp_piece {
  char* ptr;
  size_t len;
  struct tcp_req* req;
};

struct tcp_helper;

struct tcp_sock {
  int fd;
  struct tcp_comm* comm;
  struct tcp_helper* owner; /* the pool thread that moves its pieces; NULL until then */
  uint32_t head, tail;      /* the queue of pieces, under the owner's lock */
  struct tcp_piece q[TCP_QUEUE];
};

struct tcp_buf {
  char* data;
  size_t size; /* send: the size; receive: the most it takes */
  size_t got;  /* receive: the size of the message matched to it */
  int tag;
  int matched;
};

struct tcp_req {
  struct tcp_comm* comm;
  void* handle;
  int used;
  int n;         /* buffers (1 for a send) */
  int nmatched;  /* receive: buffers matched to a message so far */
  int ctrl_done; /* send: header (and inline bytes) written; receive: all matched and inline read */
  int pending;   /* pieces not moved yet (atomic: helper threads decrement) */
  uint64_t seq;  /* position among the comm's requests */
  struct tcp_buf b[TCP_MAX_RECVS];
};

/* An object net_tcp_wait polls: its fd with the events its owner wants (atomic; 0: none). */
struct tcp_poll {
  struct tcp_poll* next;
  int fd;
  int events;
};

struct tcp_comm {
  int is_send;
  void* handle;
  struct tcp_poll poll; /* the control socket */
  int ctrl;
  int dev; /* the network device: whose helper pool moves its pieces */
  int ndata, nthreads, nsocks;
  struct tcp_sock* socks; /* ndata */
  int helpers_joined;     /* its data sockets are in the device's pool */
  struct tcp_req reqs[NET_MAX_REQUESTS];
  int inflight;
  uint64_t posted;   /* requests posted so far (the next one's seq) */
  uint64_t ctrl_seq; /* the request whose message the control socket moves now */
  uint32_t next_sock;
  /* The control stream's current message. */
  struct tcp_msg_hdr hdr;
  size_t off;         /* bytes of header + inline payload moved */
  struct tcp_buf* in; /* receive: the buffer the message was matched to */
  /* Receive: bytes of the control socket read ahead (TCP_READ_AHEAD; the control stream carries
   * nothing but headers and inline bytes), so that a small message's header and bytes, and those
   * of the messages queued behind it, come in one system call: [ahead_at, ahead_len) unused. */
  char* ahead;
  size_t ahead_at, ahead_len;
  int err;         /* atomic: a sock_err (or -1: a protocol error); 0 while healthy */
  int peer_done;   /* atomic, receive: the control socket ended between messages (set before
                      err): the pieces of messages already matched still move */
  int pieces_dead; /* atomic: a data socket failed, so no piece moves any more */
  int failing;     /* atomic: set by the first thread that records a failure */
  int err_errno;
  ncclResult_t err_res;
  char peer[SOCK_ADDR_STRLEN];
};

/* net_tcp_io.c */
ncclResult_t net_tcp_reg_mr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t net_tcp_dereg_mr(void* comm, void* mhandle);
ncclResult_t net_tcp_isend(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                           void* phandle, void** request);
ncclResult_t net_tcp_irecv(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                           void** mhandles, void** phandles, void** request);
ncclResult_t net_tcp_test(void* request, int* done, size_t* sizes);
/* Takes the comm's data sockets out of the helper pool (no helper touches them afterwards; the
 * last comm of a pool ends its threads) and frees its requests (the caller closes its sockets). */
void net_tcp_comm_stop(struct tcp_comm* c);
/* The comm's failure, once: records it and logs it (INFO for a peer gone, else WARN). */
void net_tcp_comm_fail(struct tcp_comm* c, int why, int err, ncclResult_t res);
/* net.h's wait and wake for net_tcp: sleep until one of its comms may progress (a control
 * socket with a request waiting is ready, or a helper thread finished a piece) or net_tcp_wake
 * is called, at most `ms` milliseconds (< 0: no limit). Several threads may wait at once.
 * net_tcp_wake wakes them (or the next one to wait: the wakeup is kept until then, an eventfd). */
void net_tcp_wait(int ms);
void net_tcp_wake(void);
/* The most threads of one helper pool for comms of `nthreads` threads (MONEL_SOCKET_POOL_MAX, or
 * half the CPUs each rank of this machine has, at most 2 x nthreads); at least nthreads. */
int net_tcp_pool_max(int nthreads);
/* Registers/unregisters an object for net_tcp_wait. */
void net_tcp_poll_add(struct tcp_poll* p);
void net_tcp_poll_remove(struct tcp_poll* p);

#endif
