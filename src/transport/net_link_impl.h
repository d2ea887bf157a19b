/* SPDX-License-Identifier: BSD-3-Clause */
/* The net transport's insides, shared by net_link.c (a link's connections and the moving of its
 * slots, run by the proxy thread) and net_transport.c (the transport vtable that creates and
 * frees links). Who may include: those two. */
#ifndef MONEL_TRANSPORT_NET_LINK_IMPL_H
#define MONEL_TRANSPORT_NET_LINK_IMPL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "os/auth.h"
#include "transport/net.h"
#include "transport/transport.h"

#define LINK_MAGIC   0x6d6e6c6bu /* "mnlk" */
#define FREE_DRAIN_S 5.0         /* longest wait in free() for the peer to answer the goodbye */
#define PRIV_BYTES   4096

struct net_desc {
  uint32_t magic;
  uint32_t nslots;
  uint64_t slot_size;
  unsigned char handle[NET_HANDLE_BYTES];
};
_Static_assert(sizeof(struct net_desc) <= CONN_DESC_BYTES, "net descriptor too large");

/* The link's own buffers, after its FIFO in the same registered memory. */
struct link_priv {
  unsigned char hello[NET_HANDLE_BYTES]; /* sender: its back handle; receiver: the sender's */
  unsigned char out[16];                 /* a CLOSE or BYE to send */
  unsigned char in[16];                  /* sender: a CLOSE or BYE from the back connection */
};
_Static_assert(sizeof(struct link_priv) <= PRIV_BYTES, "link buffers too large");

struct link {
  struct link* next; /* in the live list */
  pthread_mutex_t lock;
  const struct net* net;
  int dev;
  int is_send, peer;
  void *listen, *data, *back; /* network comms */
  void *data_mr, *back_mr;
  unsigned char handle[NET_HANDLE_BYTES]; /* the peer's, passed to every connect call */
  unsigned char key[AUTH_KEY_BYTES];      /* the job's secret (conn->key), if keyed */
  int keyed;
  void* mem; /* the local FIFO: ctrl, then slots; then struct link_priv */
  size_t mem_len;
  struct fifo_ctrl* ctrl;
  char* slots;
  struct link_priv* priv;
  uint32_t nslots;
  size_t slot_size;
  uint32_t posted, moved; /* messages posted / completed on the data connection */
  uint32_t window;        /* most slot messages in flight */
  void* req[FIFO_MAX_SLOTS];
  /* Per slot, the profiler handle the engine gives the message in it (conn.net_phandles): set
   * by the engine before it publishes the slot (sender) or frees it (receiver), read here when
   * the slot's isend or irecv is posted; NULL: not profiled. */
  void* phandle[FIFO_MAX_SLOTS];
  void *hello_req, *out_req, *in_req;
  int hello_posted, hello_done, out_kind;
  int close_sent, bye_sent, bye_done, peer_bye, freeing, dead, up;
  uint32_t ctl_sent;  /* sender: CLOSE and BYE messages posted on the data connection */
  uint32_t fill_to;   /* sender: receives its receiver posted in all (from its BYE) */
  const char* broken; /* sender: why its data connection failed, while it hears the back one */
  double broken_at;
  double deadline;
  unsigned long long sent, received; /* bytes of completed sends and receives */
};

/* The key to pass to the network's listen and connect (net.h). */
static inline const unsigned char* link_key(const struct link* l) {
  return l->keyed ? l->key : NULL;
}

/* net_link.c: the network of this process (set once a link uses it) and the transport's name
 * after it ("net_socket/<network>"); one non-blocking step of a link (caller holds l->lock;
 * 1 if anything moved); close its connections; add it to the live list the proxy thread
 * progresses, and take it out. */
extern const struct net* net_link_chosen;
extern char net_link_name[80];
int net_link_step(struct link* l);
void net_link_shut(struct link* l);
/* After a goodbye: no request of this side is posted any more, and a sender has sent a message
 * for every receive its receiver posted (net.h's close contract). */
int net_link_quiet(const struct link* l);
void net_link_add(struct link* l);
void net_link_remove(struct link* l);
/* The largest message a link's data connection carries (a full slot; the sender's hello is
 * smaller), and its back connection's (a BYE or CLOSE): what the listens announce. */
size_t net_link_data_max(const struct link* l);
size_t net_link_back_max(void);

#endif
