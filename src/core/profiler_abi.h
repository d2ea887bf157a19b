/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's profiler plugin ABI, versions 1-7 (docs/PLUGINS.md): the function table a library
 * exports as ncclProfiler_vN and the event descriptors of each version. Layouts are NCCL's; the
 * unions are cut down to the members Monel fills, their sizes kept by the pad members. */
#ifndef MONEL_CORE_PROFILER_ABI_H
#define MONEL_CORE_PROFILER_ABI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

/* Event types: the descriptor's type and the activation-mask bits. */
enum {
  PROF_GROUP = 0x1,
  PROF_COLL = 0x2,
  PROF_P2P = 0x4,
  PROF_PROXY_OP = 0x8,
  PROF_PROXY_STEP = 0x10,
  PROF_PROXY_CTRL = 0x20,
  PROF_KERNEL_CH = 0x40,
  PROF_NET_PLUGIN = 0x80,
  PROF_GROUP_API = 0x100,
  PROF_COLL_API = 0x200,
  PROF_P2P_API = 0x400,
  PROF_KERNEL_LAUNCH = 0x800,
};
/* States of a GroupApi event, and of a ProxyStep event (NCCL's names: ProxyStepSendWait, the
 * send is posted; ProxyStepRecvWait, the receive is posted; ProxyStepRecvGPUWait, the data came
 * and its consumer takes it). */
enum { PROF_STATE_GROUP_START_API_STOP = 23, PROF_STATE_GROUP_END_API_START = 24 };
enum {
  PROF_STATE_STEP_SEND_WAIT = 9,
  PROF_STATE_STEP_RECV_WAIT = 10,
  PROF_STATE_STEP_RECV_TAKE = 12
};
/* The state of a NetPlugin event that a net plugin updates (v4+; its argument: the plugin's
 * data), and the types of the net plugin's profiler callback (net ABI v10+). */
enum { PROF_STATE_NET_PLUGIN_UPDATE = 21 };
enum { NET_EV_START = 0, NET_EV_STOP = 1, NET_EV_UPDATE = 2, NET_EV_UPDATE_STOP = 3 };

/* The members of ProxyOp and ProxyStep events: the same in every version, at offset 24. */
struct prof_proxy_op {
  int pid;
  uint8_t channel;
  int peer, nsteps, chunk, is_send;
};
struct prof_proxy_step {
  int step;
};
/* NetPlugin events (v3+, at offset 24): the plugin's id (its type in bits 16-31, its version in
 * 0-15) and its own data; recordEventState's argument of one (v4+: 8 bytes). */
struct prof_net_plugin {
  int64_t id;
  void* data;
};
struct prof_net_args {
  void* data;
};
/* recordEventState's arguments of a ProxyStep: 8 bytes read from v4 (transSize), 16 bytes
 * passed zeroed to v1-v3, as NCCL does. */
struct prof_state_args {
  size_t trans_size;
  int steps;
};

typedef void (*prof_logger)(int level, unsigned long flags, const char* file, int line,
                            const char* fmt, ...);

/* The function table (48 bytes in every version); init differs by version. */
struct prof_table {
  const char* name;
  void* init;
  ncclResult_t (*start_event)(void* ctx, void** handle, void* descr);
  ncclResult_t (*stop_event)(void* handle);
  ncclResult_t (*record_state)(void* handle, int state, void* args);
  ncclResult_t (*finalize)(void* ctx);
};
typedef ncclResult_t (*prof_init_v1)(void** ctx, int* mask);
typedef ncclResult_t (*prof_init_v4)(void** ctx, int* mask, const char* comm_name,
                                     uint64_t comm_hash, int nnodes, int nranks, int rank,
                                     prof_logger log);
typedef ncclResult_t (*prof_init_v5)(void** ctx, uint64_t comm_id, int* mask, const char* comm_name,
                                     int nnodes, int nranks, int rank, prof_logger log);

/* v1: 120 bytes; ids instead of strings. */
struct prof_descr_v1 {
  uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t comm_hash, seq;
      uint8_t func;
      const void* sendbuff;
      void* recvbuff;
      size_t count;
      int root;
      uint8_t dtype;
      uint32_t op;
      size_t traffic_bytes;
      uint8_t nch, nwarps, algo, proto;
      int is_collnet, is_nvls;
    } coll;
    struct {
      const char* name;
      uint64_t comm_hash;
      uint8_t func;
      void* buff;
      uint8_t dtype;
      size_t count;
      int peer;
    } p2p;
  };
};
/* v2: 128 bytes; v3: 120 (no traffic_bytes). */
struct prof_descr_v2 {
  uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t comm_hash, seq;
      const char* func;
      const void* sendbuff;
      void* recvbuff;
      size_t count;
      int root;
      const char* dtype;
      size_t traffic_bytes;
      uint8_t nch, nwarps;
      const char *algo, *proto;
    } coll;
    struct {
      const char* name;
      uint64_t comm_hash;
      const char* func;
      void* buff;
      const char* dtype;
      size_t count;
      int peer;
    } p2p;
  };
};
struct prof_descr_v3 {
  uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t comm_hash, seq;
      const char* func;
      const void* sendbuff;
      void* recvbuff;
      size_t count;
      int root;
      const char* dtype;
      uint8_t nch, nwarps;
      const char *algo, *proto;
    } coll;
    struct {
      const char* name;
      uint64_t comm_hash;
      const char* func;
      void* buff;
      const char* dtype;
      size_t count;
      int peer;
    } p2p;
  };
};
/* v4: 104 bytes. */
struct prof_descr_v4 {
  uint8_t type;
  void* parent;
  int rank;
  union {
    struct {
      uint64_t seq;
      const char* func;
      const void* sendbuff;
      void* recvbuff;
      size_t count;
      int root;
      const char* dtype;
      uint8_t nch, nwarps;
      const char *algo, *proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* dtype;
      size_t count;
      int peer;
      uint8_t nch;
    } p2p;
    struct prof_proxy_op proxy_op; /* v1-v4 have it at the same place */
    struct prof_proxy_step proxy_step;
    struct prof_net_plugin net_plugin; /* v3, v4 */
  };
};
/* v5 and v6: 112 bytes; v7: 136 (user tags, the kernel variant). */
struct prof_descr_v7 {
  uint64_t type;
  void* parent;
  int rank;
  union {
    struct {
      bool graph_captured;
      int depth;
    } group_api;
    struct {
      const char* func;
      size_t count;
      const char* dtype;
      int root;
      void* stream;
      bool graph_captured;
      uint64_t user_tag; /* v7 */
    } coll_api;
    struct {
      const char* func;
      size_t count;
      const char* dtype;
      void* stream;
      bool graph_captured;
      uint64_t user_tag; /* v7 */
    } p2p_api;
    struct {
      uint64_t seq;
      const char* func;
      const void* sendbuff;
      void* recvbuff;
      size_t count;
      int root;
      const char* dtype;
      uint8_t nch, nwarps;
      const char *algo, *proto;
      void* parent_group;
      const char* kernel_variant; /* v7 */
      bool is_sym;                /* v7 */
      uint64_t user_tag;          /* v7 */
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* dtype;
      size_t count;
      int peer;
      uint8_t nch;
      void* parent_group;
      uint64_t user_tag; /* v7 */
    } p2p;
    struct prof_proxy_op proxy_op;
    struct prof_proxy_step proxy_step;
    struct prof_net_plugin net_plugin;
    char pad[112]; /* v7's largest member (coll) */
  };
};
#define PROF_DESCR_V5_BYTES 112

#endif
