/* SPDX-License-Identifier: BSD-3-Clause */
/* Transports connect two ranks with a FIFO of `nslots` slots of `slot_size` bytes and two
 * counters: `tail` (slots the sender has filled) and `head` (slots the receiver has emptied).
 * Each slot starts with a cell of one cache line: its size, its data when that is small
 * (FIFO_INLINE_BYTES), and its sequence number, written last; the slot's data area follows. A
 * receiver polls the cell and takes a small message with a single cache line from the sender,
 * and a larger one from the lines right after it; the sender writes `tail` after the cell
 * (waiters sleep on `tail`). Memory: the fifo_ctrl (FIFO_CTRL_BYTES), then the slots.
 * With shm the receiver owns the FIFO memory and the sender maps it; with the net transport each
 * side has a FIFO of its own and the proxy thread moves slots through the network (net.h), so
 * the engines see the same FIFO either way. Counters only grow (mod 2^32).
 *
 * Setup, for the pair (sender S -> receiver R), both sides taking part:
 *   R: setup()   allocates the FIFO and fills a descriptor;   R --desc--> S over the bootstrap
 *   S: connect() maps the FIFO from the descriptor;            S --ack---> R
 *   R: connected() drops names that let others find the FIFO (nothing stays in /dev/shm).
 * Who may call: the engines (cpu/, gpu/, proxy/). */
#ifndef MONEL_TRANSPORT_TRANSPORT_H
#define MONEL_TRANSPORT_TRANSPORT_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

#define FIFO_MAX_SLOTS    64
#define FIFO_SIZE_BYTES   ((((uint64_t)1) << 48) - 1) /* the byte count in a cell's bytes word */
#define CONN_DESC_BYTES   256
#define FIFO_INLINE_BYTES 48 /* a slot of at most this many bytes travels in its cell */
#define FIFO_CELL_BYTES   64

struct fifo_cell {
  _Alignas(64) uint32_t seq; /* slot number + 1 once the slot is filled (written last) */
  uint32_t kind;  /* the net transport keeps a message type here; engines leave it alone */
  uint64_t bytes; /* bytes in the slot; bits above FIFO_SIZE_BYTES are flags of the engine that
                   * transports pass through */
  unsigned char data[FIFO_INLINE_BYTES]; /* the bytes, when they fit */
};

/* A waiting word (fifo_ctrl below) is 0 while nobody sleeps on its counter, 1 while the engine's
 * thread sleeps on it (a futex wait on the counter), FIFO_WAITING_PROXY while the proxy thread
 * sleeps and wants to be woken through its doorbell when the counter moves (net transport: the
 * sender's tail, the receiver's head, the counters the engine moves and the proxy reads). */
#define FIFO_WAITING_PROXY 2

struct fifo_ctrl {
  _Alignas(64) uint32_t tail; /* written by the sender */
  uint32_t tail_waiting;      /* the receiver (or the sender's proxy) sleeps on tail */
  _Alignas(64) uint32_t head; /* written by the receiver */
  uint32_t head_waiting;      /* the sender (or the receiver's proxy) sleeps on head */
  _Alignas(64) uint32_t refs; /* mappings of one process sharing this memory */
  uint32_t closed;            /* FIFO_CLOSED_*: the side that waits stops with an error */
  uint32_t lost;              /* with FIFO_CLOSED_PEER: 1 + the rank whose loss made the
                               * closing side stop (0: an error of its own, or an abort) */
};

#define FIFO_CTRL_BYTES (((sizeof(struct fifo_ctrl) + 4095) / 4096) * 4096)

/* Bytes of a FIFO's memory: its control page, then nslots of (cell, data area). */
static inline size_t fifo_mem_bytes(int nslots, size_t slot_size) {
  return FIFO_CTRL_BYTES + (size_t)nslots * (FIFO_CELL_BYTES + slot_size);
}

/* The cell of slot i, given where the slots start. */
static inline struct fifo_cell* fifo_cell(char* slots, size_t slot_size, uint32_t i) {
  return (struct fifo_cell*)(slots + (size_t)i * (FIFO_CELL_BYTES + slot_size));
}

/* The data area of slot i. */
static inline char* fifo_data(char* slots, size_t slot_size, uint32_t i) {
  return (char*)fifo_cell(slots, slot_size, i) + FIFO_CELL_BYTES;
}

/* Where the data of slot i (of `bytes`, flags included) lies: in its cell or in its area. */
static inline char* fifo_payload(char* slots, size_t slot_size, uint32_t i, uint64_t bytes) {
  struct fifo_cell* cell = fifo_cell(slots, slot_size, i);
  if ((bytes & FIFO_SIZE_BYTES) <= FIFO_INLINE_BYTES) return (char*)cell->data;
  return (char*)cell + FIFO_CELL_BYTES;
}

/* Values of fifo_ctrl.closed (0: open). */
#define FIFO_CLOSED_PEER 1 /* a side failed (or aborted) and stopped using the FIFO */
/* net: the connection broke without a goodbye (the process or the host is gone) */
#define FIFO_CLOSED_LOST 2
#define FIFO_CLOSED_GONE 3 /* net: the peer freed its side (destroyed its communicator) */

struct peer_info;
struct conn_prof;

struct conn {
  const struct transport* tr;
  struct fifo_ctrl* ctrl;
  char* slots; /* nslots of (cell, data area of slot_size bytes) */
  int nslots;
  size_t slot_size;
  uint32_t pos;             /* my counter: next slot to fill (sender) or to read (receiver) */
  uint32_t slot;            /* pos % nslots */
  uint32_t head_seen;       /* sender: the last value of head it read */
  int peer;                 /* comm rank of the other side */
  int peer_pid;             /* set by the engine before setup: the peer pid on this host, -1 if this
                             * process, 0 on another host (or over TCP, where the connection tells) */
  const unsigned char* key; /* set by the engine before setup: the job's secret (os/auth.h)
                             * that network connections prove; NULL: none */
  int net_dev;              /* set by the engine before setup: the device of the network (net.h)
                             * a network connection uses (0: the first) */
  void* map;                /* what free() releases (net: the link, which holds the FIFO memory) */
  size_t map_len;
  char name[64]; /* shm name while it exists */
  int owner;     /* 1 on the receiver side */
  /* The engine's profiler state of the operations moving slots through this connection (the
   * CPU engine's, cpu/prof.c: network connections only, while an operation asks for proxy
   * events); NULL otherwise. Transports leave it alone. */
  struct conn_prof* prof;
  /* Network connections: the link's table of profiler handles, one per slot, that the proxy
   * thread passes to the network with the slot's isend or irecv (net.h: phandle). The engine
   * stores (release) the handle of a slot's step before it publishes the slot (sender: tail)
   * or frees it (receiver: head), and NULL once the step ends; entries stay NULL when nothing
   * is profiled. NULL for other transports. */
  void** net_phandles;
};

struct transport {
  const char* name;
  /* 1 if this transport can connect me to peer. */
  int (*can_connect)(const struct peer_info* me, const struct peer_info* peer);
  /* Receiver: allocate the FIFO, write a descriptor of at most CONN_DESC_BYTES. */
  ncclResult_t (*setup)(struct conn* c, int nslots, size_t slot_size, void* desc);
  /* Sender: map the FIFO a descriptor names. */
  ncclResult_t (*connect)(struct conn* c, const void* desc);
  /* Receiver: the sender has mapped the FIFO. */
  ncclResult_t (*connected)(struct conn* c);
  /* Either side; accepts a conn that was never set up. */
  void (*free)(struct conn* c);
  /* Optional: returns once the thread that moves c's slots has finished any use of an entry of
   * c->net_phandles that it read before the call. */
  void (*sync)(struct conn* c);
};

extern const struct transport shm_transport;
/* Between hosts: each side keeps its FIFO in local memory; the proxy thread (proxy/) moves
 * filled slots between them through the network of net.h (net_link.h). Its name, as logs show
 * it, is "net_socket/" and the network's name ("net_socket/Socket" for the built-in TCP one). */
extern const struct transport net_socket_transport;

#endif
