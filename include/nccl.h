/*
 * nccl.h - the public C API of Monel, binary compatible with NCCL 2.28.9.
 *
 * A program compiled against this header (or against NVIDIA's) runs on Monel's
 * libnccl.so.2. Every name, enum value, struct size and field offset below is
 * part of that contract; tests/abi proves it against NVIDIA's header where one
 * is installed. Monel's own additions live in monel.h, never here.
 *
 * Every function ncclX has a twin pncclX with the same signature: the library
 * defines pncclX and makes ncclX a weak alias of it, so a profiling or tracing
 * layer can interpose ncclX and still reach the real implementation.
 *
 * CUDA headers: when cuda_runtime.h is reachable it is included (with
 * cuda_fp16.h and cuda_bf16.h). Define MONEL_NO_CUDA_HEADERS to build without
 * them; cudaStream_t is then declared with the same struct tag CUDA uses, so
 * objects compiled either way agree on every signature.
 */
#ifndef NCCL_H_
#define NCCL_H_
#define MONEL_NCCL_H 1

/* ---- CUDA types ------------------------------------------------------- */

#if !defined(MONEL_NO_CUDA_HEADERS) && defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#define MONEL_NCCL_HAVE_CUDA_HEADERS 1
#endif
#endif

#ifdef MONEL_NCCL_HAVE_CUDA_HEADERS
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if defined(CUDART_VERSION) && CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && defined(CUDART_VERSION) && CUDART_VERSION >= 11080
#if __has_include(<cuda_fp8.h>)
#include <cuda_fp8.h>
#endif
#endif
#else
/* A stream is an opaque pointer; the tag matches CUDA's own declaration. */
typedef struct CUstream_st* cudaStream_t;
#endif

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <stdbool.h>
#endif

/* ---- Version ---------------------------------------------------------- */

#define NCCL_MAJOR  2
#define NCCL_MINOR  28
#define NCCL_PATCH  9
#define NCCL_SUFFIX ""

/* Releases up to 2.8 used a four-digit code, later ones a five-digit code. */
#define NCCL_VERSION(X, Y, Z)                                                                      \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE 22809

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles ---------------------------------------------------------- */

/* A communicator: one rank's membership in a group of ranks. */
typedef struct ncclComm* ncclComm_t;
#define NCCL_COMM_NULL NULL

/* A registered memory window (ncclCommWindowRegister). */
typedef struct ncclWindow_vidmem* ncclWindow_t;

/* The rendezvous token every rank of a new communicator must share. Its bytes
 * are opaque: move them between processes as NCCL_UNIQUE_ID_BYTES raw bytes. */
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ---- Results ---------------------------------------------------------- */

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1, /* a CUDA call failed */
  ncclSystemError = 2,        /* a system call failed */
  ncclInternalError = 3,      /* a bug in the library */
  ncclInvalidArgument = 4,    /* an argument had a wrong value */
  ncclInvalidUsage = 5,       /* the call was made in a wrong state or order */
  ncclRemoteError = 6,        /* a peer failed or went away */
  ncclInProgress = 7,         /* a nonblocking operation has not finished yet */
  ncclNumResults = 8
} ncclResult_t;

/* ---- Constants -------------------------------------------------------- */

/* "Not set" markers in ncclConfig_t: the library picks the default. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
/* Color passed to ncclCommSplit by ranks that join no new communicator. */
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT   -1.0f

/* winFlags of ncclCommWindowRegister. */
#define NCCL_WIN_DEFAULT        0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
/* Symmetric windows must start on this boundary. */
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* Values of ncclConfig_t.CTAPolicy. */
#define NCCL_CTA_POLICY_DEFAULT    0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO       0x02

/* shrinkFlags of ncclCommShrink: plain shrink, or abort the parent's pending
 * operations first (for a parent with failed ranks). */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT   0x01

/* revokeFlags of ncclCommRevoke; no other value is defined yet. */
#define NCCL_REVOKE_DEFAULT 0x00

/* ---- Communicator configuration --------------------------------------- */

/* Options for a new communicator. Always start from NCCL_CONFIG_INITIALIZER,
 * then set the fields you care about; the first three fields identify the
 * struct's version and must be left alone. Layout on LP64: sizeof 80. */
typedef struct ncclConfig_v22800 {
  size_t size;             /*  0: sizeof the caller's struct */
  unsigned int magic;      /*  8: 0xcafebeef */
  unsigned int version;    /* 12: NCCL_VERSION of the caller's header */
  int blocking;            /* 16: 0 = calls may return ncclInProgress */
  int cgaClusterSize;      /* 20: thread-block cluster size hint */
  int minCTAs;             /* 24: lowest number of thread blocks per kernel */
  int maxCTAs;             /* 28: highest number of thread blocks per kernel */
  const char* netName;     /* 32: network plugin to use, by name */
  int splitShare;          /* 40: children of ncclCommSplit share resources */
  int trafficClass;        /* 44: network traffic class */
  const char* commName;    /* 48: name shown in logs */
  int collnetEnable;       /* 56: allow in-network reduction */
  int CTAPolicy;           /* 60: NCCL_CTA_POLICY_* */
  int shrinkShare;         /* 64: children of ncclCommShrink share resources */
  int nvlsCTAs;            /* 68: thread blocks for NVLink SHARP algorithms */
  int nChannelsPerNetPeer; /* 72: channels per network peer (added in 2.28) */
  int nvlinkCentricSched;  /* 76: NVLink-first scheduling (added in 2.28) */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                    \
  {                                                                                                \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),            \
        NCCL_CONFIG_UNDEF_INT /* blocking */, NCCL_CONFIG_UNDEF_INT /* cgaClusterSize */,          \
        NCCL_CONFIG_UNDEF_INT /* minCTAs */, NCCL_CONFIG_UNDEF_INT /* maxCTAs */,                  \
        NCCL_CONFIG_UNDEF_PTR /* netName */, NCCL_CONFIG_UNDEF_INT /* splitShare */,               \
        NCCL_CONFIG_UNDEF_INT /* trafficClass */, NCCL_CONFIG_UNDEF_PTR /* commName */,            \
        NCCL_CONFIG_UNDEF_INT /* collnetEnable */, NCCL_CONFIG_UNDEF_INT /* CTAPolicy */,          \
        NCCL_CONFIG_UNDEF_INT /* shrinkShare */, NCCL_CONFIG_UNDEF_INT /* nvlsCTAs */,             \
        NCCL_CONFIG_UNDEF_INT /* nChannelsPerNetPeer */,                                           \
        NCCL_CONFIG_UNDEF_INT /* nvlinkCentricSched */                                             \
  }

/* What ncclGroupSimulateEnd reports. Start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;          /*  0: sizeof the caller's struct */
  unsigned int magic;   /*  8: 0x74685283 */
  unsigned int version; /* 12: NCCL_VERSION of the caller's header */
  float estimatedTime;  /* 16: predicted duration of the group, microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER                                                                  \
  {                                                                                                \
    sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),           \
        NCCL_UNDEF_FLOAT                                                                           \
  }

/* ---- Reduction operators, data types ---------------------------------- */

/* Only here to pin the size of ncclRedOp_t to that of a plain enum (int). */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;

typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  /* Count of built-in operators; operators made by ncclRedOpCreatePreMulSum
   * take values from here up to ncclMaxRedOp. */
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives. */
typedef enum {
  /* Device-visible memory, read while each collective using the op runs. */
  ncclScalarDevice = 0,
  /* Host memory, read once before ncclRedOpCreatePreMulSum returns. */
  ncclScalarHostImmediate = 1
} ncclScalarResidence_t;

#if defined(__GNUC__) || defined(__clang__)
#define MONEL_NCCL_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define MONEL_NCCL_DEPRECATED(msg)
#endif

/* ---- Memory ----------------------------------------------------------- */

/* Allocate / free memory suited to every transport (peers may map it, it may be
 * registered). The block may be larger than asked. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* ---- Library and communicator lifetime -------------------------------- */

/* Writes NCCL_VERSION_CODE of the loaded library. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* Creates a rendezvous token. Call on one rank, share the bytes with all. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* Joins rank `rank` of `nranks` to the communicator named by commId. config may
 * be NULL (defaults). Collective over all ranks: call from one thread per rank
 * or inside ncclGroupStart/ncclGroupEnd. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);

/* ncclCommInitRankConfig with the default configuration. */
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/* Creates all ndev ranks of a communicator in this process, rank i on device
 * devlist[i] (devices 0..ndev-1 when devlist is NULL). comm holds ndev slots. */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Like ncclCommInitRankConfig, with nId tokens (the same list on every rank)
 * that spread the rendezvous over several roots. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);

/* Completes every operation issued on comm and releases what peers share;
 * ncclCommDestroy then frees the rest without talking to peers. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/* Frees the communicator's local resources. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/* Stops whatever is in flight and frees the communicator; returns in bounded
 * time even when peers are gone. */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);

/* Stops in-flight operations without freeing the communicator, so that it can
 * then be destroyed, split or shrunk. revokeFlags must be NCCL_REVOKE_DEFAULT. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Collective over comm: ranks passing the same color form a new communicator,
 * ordered by key. NCCL_SPLIT_NOCOLOR yields *newcomm = NULL. A NULL config
 * inherits the parent's. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);

/* A new communicator of the parent's ranks minus excludeRanksList, renumbered
 * densely in the parent's order. shrinkFlags: NCCL_SHRINK_*. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/* ---- Errors and queries ----------------------------------------------- */

/* A short static description of a result code. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* A sentence about the most recent error (comm may be NULL). */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Re-reads the logging environment. Kept for old programs only. */
MONEL_NCCL_DEPRECATED("ncclResetDebugInit is not part of the supported API")
void ncclResetDebugInit(void);
MONEL_NCCL_DEPRECATED("pncclResetDebugInit is not part of the supported API")
void pncclResetDebugInit(void);

/* The communicator's state: ncclSuccess, ncclInProgress, or the error that
 * stopped it. Safe to poll from another thread. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

/* Number of ranks, CUDA device, and rank of the caller in comm. */
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* ---- Buffer registration ---------------------------------------------- */

/* Registers a buffer with comm for zero-copy use; *handle names it. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/* Collective over comm: registers a window (NCCL_WIN_* flags). */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/* ---- Custom reduction operators --------------------------------------- */

/* Makes an operator that multiplies each input by *scalar (of type datatype)
 * and then sums. Usable only on comm, with datatype. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);

/* Releases an operator; allowed as soon as the last call using it returned. */
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- Collectives -------------------------------------------------------
 * Every rank of comm makes the same call (same count, type, op, root). A call
 * returns once the work is queued on stream. One thread driving several ranks
 * must wrap the calls in ncclGroupStart/ncclGroupEnd. */

/* recvbuff (significant at root only) = op over all ranks' sendbuff. */
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream);

/* In-place broadcast of root's buff (older form of ncclBroadcast). */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);

/* Every recvbuff = root's sendbuff. */
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream);

/* Every recvbuff = op over all ranks' sendbuff. */
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);

/* Rank r's recvbuff = block r (recvcount elements) of op over all sendbuffs,
 * which hold nranks*recvcount elements. In place when
 * recvbuff == sendbuff + rank*recvcount. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream);

/* Block r (sendcount elements) of every recvbuff = rank r's sendbuff. In place
 * when sendbuff == recvbuff + rank*sendcount. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Block j (count elements) of rank i's sendbuff goes to block i of rank j's
 * recvbuff. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* Block r of root's recvbuff = rank r's sendbuff (count elements). */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Rank r's recvbuff = block r of root's sendbuff (count elements). */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* ---- Point to point ----------------------------------------------------
 * A send to peer p matches p's receive from this rank (same count and type).
 * Sends and receives that must progress together go in one group. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);

/* ---- Groups ------------------------------------------------------------
 * Calls between ncclGroupStart and ncclGroupEnd (per thread, nesting allowed)
 * are only recorded; the outermost ncclGroupEnd launches them together. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);

/* Ends the group without running it and reports the predicted time. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* ---- Host side of the device API (NCCL 2.28) ---------------------------
 * Kernels written against NCCL's device headers receive an ncclDevComm by
 * value and read the structs below directly, so their layout is ABI. These
 * declarations are skipped when NCCL's own device headers are being included
 * (they define the same types), or when MONEL_NO_DEVICE_API is defined, e.g. by
 * a program that includes NCCL's device headers after this file. */
#if !defined(_NCCL_DEVICE_CORE_H_) && !defined(MONEL_NO_DEVICE_API)

/* Index of a resource buffer inside the device communicator's window. */
typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
/* First id of a range of network signals / counters. */
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;

/* A set of ranks seen as rank*stride + k: nRanks members, the caller being
 * member `rank`. Size 12. */
typedef struct ncclTeam {
  int nRanks;
  int rank;
  int stride;
} ncclTeam_t;

/* The device view of a window. Size 72. */
struct ncclWindow_vidmem {
  void* winHost;        /*  0: the host-side window object */
  char* lsaFlatBase;    /*  8: local address of the first byte of lsa rank 0 */
  int lsaRank;          /* 16 */
  int worldRank;        /* 20 */
  uint32_t stride4G;    /* 24: distance between lsa peers, in 4 GiB units */
  uint32_t mcOffset4K;  /* 28: multicast offset, in 4 KiB units */
  uint32_t ginOffset4K; /* 32: network window offset, in 4 KiB units */
  void* ginWins[4];     /* 40: one network window per context */
};

/* A multicast mapping. Size 8. */
typedef struct ncclMultimemHandle {
  void* mcBasePtr;
} ncclMultimemHandle_t;

/* Barrier among the load/store-accessible ranks. Size 8. */
typedef struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
} ncclLsaBarrierHandle_t;

/* Barrier over the network. Size 8. */
typedef struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t bufHandle;
} ncclGinBarrierHandle_t;

/* Low-latency all-to-all slots. Size 8. */
typedef struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
} ncclLLA2AHandle_t;

/* Defined only for device code; host code sees a pointer. */
struct ncclDevCommWindowTable;

/* What a device communicator gives a kernel. Size 200. */
typedef struct ncclDevComm {
  int rank;                                        /*   0: world rank */
  int nRanks;                                      /*   4 */
  uint32_t nRanks_rcp32;                           /*   8: reciprocal for fast division by nRanks */
  int lsaRank;                                     /*  12 */
  int lsaSize;                                     /*  16 */
  uint32_t lsaSize_rcp32;                          /*  20 */
  struct ncclDevCommWindowTable* windowTable;      /* 24 */
  ncclWindow_t resourceWindow;                     /* 32 */
  struct ncclWindow_vidmem resourceWindow_inlined; /* 40 */
  ncclMultimemHandle_t lsaMultimem;                /* 112 */
  ncclLsaBarrierHandle_t lsaBarrier;               /* 120 */
  ncclGinBarrierHandle_t railGinBarrier;           /* 128 */
  uint8_t ginContextCount;                         /* 136 */
  uint8_t ginTypes[4];                             /* 137 */
  void* ginHandles[4];                             /* 144 */
  uint32_t ginSignalBase;                          /* 176 */
  int ginSignalCount;                              /* 180 */
  uint32_t ginCounterBase;                         /* 184 */
  int ginCounterCount;                             /* 188 */
  uint64_t* ginSignalShadows;                      /* 192 */
} ncclDevComm_t;

/* A request for device-visible memory and network signals/counters, chained
 * through `next`; the out* targets are filled by ncclDevCommCreate. Size 56. */
typedef struct ncclDevResourceRequirements {
  struct ncclDevResourceRequirements* next;
  size_t bufferSize;
  size_t bufferAlign;
  ncclDevResourceHandle_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t* outGinSignalStart;
  ncclGinCounter_t* outGinCounterStart;
} ncclDevResourceRequirements_t;

/* A team the device communicator must support, chained through `next`.
 * Size 32. */
typedef struct ncclTeamRequirements {
  struct ncclTeamRequirements* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t* outMultimemHandle;
} ncclTeamRequirements_t;

/* Everything a device communicator is created with. Size 56. */
typedef struct ncclDevCommRequirements {
  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;
  bool lsaMultimem; /* multicast over the lsa team */
  int barrierCount;
  int lsaBarrierCount;
  int railGinBarrierCount;
  int lsaLLA2ABlockCount;
  int lsaLLA2ASlotCount;
  bool ginForceEnable;
  int ginContextCount; /* a hint */
  int ginSignalCount;  /* ids start at 0 */
  int ginCounterCount; /* ids start at 0 */
} ncclDevCommRequirements_t;

/* Collective over comm: builds / frees a device communicator. */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                               ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                                ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);

/* All ranks; the ranks reachable by load/store; same-index ranks of every
 * load/store domain. */
ncclTeam_t ncclTeamWorld(ncclComm_t comm);
ncclTeam_t pncclTeamWorld(ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm);
ncclTeam_t pncclTeamLsa(ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm);
ncclTeam_t pncclTeamRail(ncclComm_t comm);

/* Translates member `rank` of team to a world / lsa rank. */
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);

/* Fill *outReq (to chain into ncclDevCommRequirements) for nBarriers barriers. */
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                              ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);

/* Slots needed to move maxElts elements of maxEltSize bytes; then the
 * requirement for nBlocks blocks of nSlots slots. */
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq);

#endif /* device API */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
