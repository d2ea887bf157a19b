/* SPDX-License-Identifier: BSD-3-Clause */
/* The part of UCX's UCP interface that the UCX network uses, declared here so that every build
 * of Monel carries the UCX network with no UCX headers installed: UCX itself is loaded at run
 * time (net_ucx_lib.c, dlopen of libucp.so.0), and these are the types, flags and codes its
 * functions take and return. They follow UCP's binary interface as of API 1.12, which UCX keeps
 * for later versions: a parameter struct is read only in the fields its field mask names, so the
 * structs below stop after the last field Monel sets and pad to the size of UCX 1.13's.
 * tests/unit/test_ucx_api.c checks every size, offset and value below against UCX's own header
 * where one is installed.
 * Who may include it: net_ucx.h only. */
#ifndef MONEL_TRANSPORT_UCX_API_H
#define MONEL_TRANSPORT_UCX_API_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

/* The API version Monel is written for (ucp_init_version's first two arguments). */
#define UCP_API_MAJOR 1
#define UCP_API_MINOR 12

/* Status codes: a signed byte (UCX packs the enum). */
typedef int8_t ucs_status_t;
#define UCS_OK                    ((ucs_status_t)0)
#define UCS_INPROGRESS            ((ucs_status_t)1)
#define UCS_ERR_NO_MEMORY         ((ucs_status_t)-4)
#define UCS_ERR_MESSAGE_TRUNCATED ((ucs_status_t)-9)
#define UCS_ERR_BUSY              ((ucs_status_t)-15)
#define UCS_ERR_CONNECTION_RESET  ((ucs_status_t)-25)
#define UCS_ERR_LAST              ((ucs_status_t)-100)

/* A request, or a status coded in the pointer (the values from UCS_ERR_LAST up to -1). */
typedef void* ucs_status_ptr_t;
#define UCS_PTR_IS_ERR(p) ((uintptr_t)(p) >= (uintptr_t)(intptr_t)UCS_ERR_LAST)
#define UCS_PTR_IS_PTR(p) ((uintptr_t)(p)-1 < (uintptr_t)(intptr_t)UCS_ERR_LAST - 1)
#define UCS_PTR_STATUS(p) (UCS_PTR_IS_PTR(p) ? UCS_INPROGRESS : (ucs_status_t)(intptr_t)(p))
#define UCS_STATUS_PTR(s) ((void*)(intptr_t)(s))
#define UCS_BIT(i)        (1ul << (i))

typedef enum { UCS_MEMORY_TYPE_HOST = 0, UCS_MEMORY_TYPE_CUDA = 1 } ucs_memory_type_t;
typedef enum { UCS_THREAD_MODE_SINGLE = 0, UCS_THREAD_MODE_SERIALIZED = 1 } ucs_thread_mode_t;
typedef enum {
  UCP_ERR_HANDLING_MODE_NONE = 0,
  UCP_ERR_HANDLING_MODE_PEER = 1
} ucp_err_handling_mode_t;

/* Handles: pointers to UCX's own objects, never looked into. */
typedef struct ucp_context* ucp_context_h;
typedef struct ucp_worker* ucp_worker_h;
typedef struct ucp_ep* ucp_ep_h;
typedef struct ucp_listener* ucp_listener_h;
typedef struct ucp_conn_request* ucp_conn_request_h;
typedef struct ucp_recv_desc* ucp_tag_message_h;
typedef struct ucp_mem* ucp_mem_h;
typedef struct ucp_rkey* ucp_rkey_h;
typedef struct ucp_config ucp_config_t;
typedef struct ucp_address ucp_address_t;
typedef uint64_t ucp_tag_t;
typedef uint64_t ucp_datatype_t;

typedef struct {
  const struct sockaddr* addr;
  socklen_t addrlen;
} ucs_sock_addr_t;

/* ucp_init_version's parameters. */
#define UCP_PARAM_FIELD_FEATURES UCS_BIT(0)
#define UCP_FEATURE_TAG          UCS_BIT(0)
#define UCP_FEATURE_RMA          UCS_BIT(1)
#define UCP_FEATURE_WAKEUP       UCS_BIT(4)
typedef struct {
  uint64_t field_mask;
  uint64_t features;
  unsigned char unused[64];
} ucp_params_t;

/* ucp_context_query's answer. */
#define UCP_ATTR_FIELD_MEMORY_TYPES UCS_BIT(2)
typedef struct {
  uint64_t field_mask;
  size_t request_size;
  ucs_thread_mode_t thread_mode;
  uint64_t memory_types; /* a bit per ucs_memory_type_t */
  unsigned char unused[32];
} ucp_context_attr_t;

/* ucp_worker_create's parameters. */
#define UCP_WORKER_PARAM_FIELD_THREAD_MODE UCS_BIT(0)
typedef struct {
  uint64_t field_mask;
  ucs_thread_mode_t thread_mode;
  unsigned char unused[188];
} ucp_worker_params_t;

/* A listener: where it listens, and who is called when a client connects. */
typedef void (*ucp_listener_conn_callback_t)(ucp_conn_request_h request, void* arg);
typedef struct {
  ucp_listener_conn_callback_t cb;
  void* arg;
} ucp_listener_conn_handler_t;
#define UCP_LISTENER_PARAM_FIELD_SOCK_ADDR    UCS_BIT(0)
#define UCP_LISTENER_PARAM_FIELD_CONN_HANDLER UCS_BIT(2)
typedef struct {
  uint64_t field_mask;
  ucs_sock_addr_t sockaddr;
  struct {
    void* cb;
    void* arg;
  } accept_handler; /* not used by Monel */
  ucp_listener_conn_handler_t conn_handler;
} ucp_listener_params_t;
#define UCP_LISTENER_ATTR_FIELD_SOCKADDR UCS_BIT(0)
typedef struct {
  uint64_t field_mask;
  struct sockaddr_storage sockaddr;
} ucp_listener_attr_t;

/* An endpoint: to a worker's address, to a listener's socket address, or accepting a client. */
typedef void (*ucp_err_handler_cb_t)(void* arg, ucp_ep_h ep, ucs_status_t status);
typedef struct {
  ucp_err_handler_cb_t cb;
  void* arg;
} ucp_err_handler_t;
#define UCP_EP_PARAM_FIELD_REMOTE_ADDRESS    UCS_BIT(0)
#define UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE UCS_BIT(1)
#define UCP_EP_PARAM_FIELD_ERR_HANDLER       UCS_BIT(2)
#define UCP_EP_PARAM_FIELD_SOCK_ADDR         UCS_BIT(4)
#define UCP_EP_PARAM_FIELD_FLAGS             UCS_BIT(5)
#define UCP_EP_PARAM_FIELD_CONN_REQUEST      UCS_BIT(6)
#define UCP_EP_PARAMS_FLAGS_CLIENT_SERVER    UCS_BIT(0)
typedef struct {
  uint64_t field_mask;
  const ucp_address_t* address;
  ucp_err_handling_mode_t err_mode;
  ucp_err_handler_t err_handler;
  void* user_data;
  unsigned flags;
  ucs_sock_addr_t sockaddr;
  ucp_conn_request_h conn_request;
  unsigned char unused[24];
} ucp_ep_params_t;
#define UCP_EP_CLOSE_FLAG_FORCE UCS_BIT(0)

/* The parameters of an operation (send, receive, get, close). */
#define UCP_OP_ATTR_FIELD_FLAGS       UCS_BIT(4)
#define UCP_OP_ATTR_FIELD_MEMORY_TYPE UCS_BIT(6)
#define UCP_OP_ATTR_FLAG_NO_IMM_CMPL  UCS_BIT(16)
typedef struct {
  uint32_t op_attr_mask;
  uint32_t flags;
  void* request;
  void* cb; /* a completion callback; Monel polls its requests instead */
  ucp_datatype_t datatype;
  void* user_data;
  void* reply_buffer;
  ucs_memory_type_t memory_type;
  void* recv_info;
  unsigned char unused[8];
} ucp_request_param_t;

typedef struct {
  ucp_tag_t sender_tag;
  size_t length;
} ucp_tag_recv_info_t;

/* ucp_mem_map's parameters. */
#define UCP_MEM_MAP_PARAM_FIELD_ADDRESS     UCS_BIT(0)
#define UCP_MEM_MAP_PARAM_FIELD_LENGTH      UCS_BIT(1)
#define UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE UCS_BIT(4)
typedef struct {
  uint64_t field_mask;
  void* address;
  size_t length;
  unsigned flags;
  unsigned prot;
  ucs_memory_type_t memory_type;
} ucp_mem_map_params_t;

#endif
