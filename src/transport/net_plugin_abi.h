/* SPDX-License-Identifier: BSD-3-Clause */
/* The binary interface of NCCL net plugins, versions 8 to 11, as Monel loads them (net_plugin.c):
 * the structs a plugin's `ncclNetPlugin_vN` symbol points to and the ones its calls fill. Written
 * from the published facts of the interface (member order and C types); names are Monel's.
 * Who may include: net_plugin.c. */
#ifndef MONEL_TRANSPORT_NET_PLUGIN_ABI_H
#define MONEL_TRANSPORT_NET_PLUGIN_ABI_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

#define NETP_HANDLE_BYTES 128
#define NETP_PTR_HOST     0x1
#define NETP_PTR_CUDA     0x2
#define NETP_PTR_DMABUF   0x4
#define NETP_MAX_REQUESTS 32
#define NETP_VDEVS_MAX    4

/* Logger levels and subsystem bits: the same numbers as util/log.h. */
typedef void (*netp_logger_t)(int level, unsigned long subsys, const char* file, int line,
                              const char* fmt, ...);
typedef ncclResult_t (*netp_profiler_t)(void** event, int type, void* phandle, int64_t plugin_id,
                                        void* ext);

struct netp_vprops {
  int ndevs;
  int devs[NETP_VDEVS_MAX];
};

struct netp_props_v8 {
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int speed; /* Mb/s */
  int port;
  float latency; /* us */
  int max_comms;
  int max_recvs;
  int dev_type; /* 0: host, 1: unpack */
  int dev_version;
};

/* v9 and v10. */
struct netp_props_v9 {
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  int dev_type;
  int dev_version;
  struct netp_vprops vprops;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
};

struct netp_props_v11 {
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  int dev_type;
  int dev_version;
  struct netp_vprops vprops;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
  int max_multi_request;
};

/* A device-offload handle; Monel passes pointers to NULL and uses none. */
struct netp_dev_handle {
  int type;
  int version;
  void* handle;
  size_t size;
  int needs_proxy_progress;
};

struct netp_config {
  int traffic_class; /* -1: undefined */
};

struct netp_attr_side {
  int32_t max_concurrent_peers, min_concurrent_peers, max_flows_per_peer, min_flows_per_peer;
};

struct netp_attr {
  struct netp_attr_side send, recv;
  uint32_t op, algo, proto;
};

struct netp_v8 {
  const char* name;
  ncclResult_t (*init)(netp_logger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*get_properties)(int dev, struct netp_props_v8* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(int dev, void* handle, void** send_comm, struct netp_dev_handle** dh);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, struct netp_dev_handle** dh);
  ncclResult_t (*reg_mr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*reg_mr_dmabuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                                int fd, void** mhandle);
  ncclResult_t (*dereg_mr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, int size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles,
                        void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*close_send)(void* send_comm);
  ncclResult_t (*close_recv)(void* recv_comm);
  ncclResult_t (*close_listen)(void* listen_comm);
  ncclResult_t (*get_device_mr)(void* comm, void* mhandle, void** dptr);
  ncclResult_t (*irecv_consumed)(void* recv_comm, int n, void* request);
};

struct netp_v9 {
  const char* name;
  ncclResult_t (*init)(netp_logger_t logger);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*get_properties)(int dev, struct netp_props_v9* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(int dev, void* handle, void** send_comm, struct netp_dev_handle** dh);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, struct netp_dev_handle** dh);
  ncclResult_t (*reg_mr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*reg_mr_dmabuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                                int fd, void** mhandle);
  ncclResult_t (*dereg_mr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*close_send)(void* send_comm);
  ncclResult_t (*close_recv)(void* recv_comm);
  ncclResult_t (*close_listen)(void* listen_comm);
  ncclResult_t (*get_device_mr)(void* comm, void* mhandle, void** dptr);
  ncclResult_t (*irecv_consumed)(void* recv_comm, int n, void* request);
  ncclResult_t (*make_vdevice)(int* d, struct netp_vprops* props);
};

struct netp_v10 {
  const char* name;
  ncclResult_t (*init)(netp_logger_t logger, netp_profiler_t profiler);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*get_properties)(int dev, struct netp_props_v9* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(int dev, struct netp_config* config, void* handle, void** send_comm,
                          struct netp_dev_handle** dh);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, struct netp_dev_handle** dh);
  ncclResult_t (*reg_mr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*reg_mr_dmabuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                                int fd, void** mhandle);
  ncclResult_t (*dereg_mr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*close_send)(void* send_comm);
  ncclResult_t (*close_recv)(void* recv_comm);
  ncclResult_t (*close_listen)(void* listen_comm);
  ncclResult_t (*get_device_mr)(void* comm, void* mhandle, void** dptr);
  ncclResult_t (*irecv_consumed)(void* recv_comm, int n, void* request);
  ncclResult_t (*make_vdevice)(int* d, struct netp_vprops* props);
};

struct netp_v11 {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t comm_id, struct netp_config* config,
                       netp_logger_t logger, netp_profiler_t profiler);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*get_properties)(int dev, struct netp_props_v11* props);
  ncclResult_t (*listen)(void* ctx, int dev, void* handle, void** listen_comm);
  ncclResult_t (*connect)(void* ctx, int dev, void* handle, void** send_comm,
                          struct netp_dev_handle** dh);
  ncclResult_t (*accept)(void* listen_comm, void** recv_comm, struct netp_dev_handle** dh);
  ncclResult_t (*reg_mr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*reg_mr_dmabuf)(void* comm, void* data, size_t size, int type, uint64_t offset,
                                int fd, void** mhandle);
  ncclResult_t (*dereg_mr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle,
                        void* phandle, void** request);
  ncclResult_t (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags,
                        void** mhandles, void** phandles, void** request);
  ncclResult_t (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles,
                         void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*close_send)(void* send_comm);
  ncclResult_t (*close_recv)(void* recv_comm);
  ncclResult_t (*close_listen)(void* listen_comm);
  ncclResult_t (*get_device_mr)(void* comm, void* mhandle, void** dptr);
  ncclResult_t (*irecv_consumed)(void* recv_comm, int n, void* request);
  ncclResult_t (*make_vdevice)(int* d, struct netp_vprops* props);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*set_net_attr)(void* ctx, struct netp_attr* attr);
};

#endif
