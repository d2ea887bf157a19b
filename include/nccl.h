/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nccl.h - the public C API of Monel, binary compatible with NCCL 2.32.3
 * (and, for programs built against it, with NCCL 2.28.9).
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
/* Streams and events are opaque pointers; the tags match CUDA's own declarations. */
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#endif

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#if !defined(__cplusplus)
#include <stdbool.h>
#endif

/* ---- Version ---------------------------------------------------------- */

#define NCCL_MAJOR  2
#define NCCL_MINOR  32
#define NCCL_PATCH  3
#define NCCL_SUFFIX ""

/* Releases up to 2.8 used a four-digit code, later ones a five-digit code. */
#define NCCL_VERSION(X, Y, Z)                                                                      \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
#define NCCL_VERSION_CODE 23203

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
  ncclTimeout = 8,            /* an operation did not finish in its time limit (added in 2.32) */
  ncclNumResults = 9
} ncclResult_t;

/* ---- Constants -------------------------------------------------------- */

/* "Not set" markers in ncclConfig_t: the library picks the default. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
/* Color passed to ncclCommSplit by ranks that join no new communicator. */
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT   -1.0f

/* The magic number of every versioned struct of this API (ncclConfig_t,
 * ncclCollConfig_t, ncclEncryptionConfig_t, ...). Set by the initializers. */
#define NCCL_API_MAGIC 0xcafebeef

/* winFlags of ncclCommWindowRegister. */
#define NCCL_WIN_DEFAULT         0x00
#define NCCL_WIN_COLL_SYMMETRIC  0x01
#define NCCL_WIN_STRICT_ORDERING 0x02 /* puts into the window land in issue order */
#define NCCL_WIN_GIN_ONLY        0x04 /* register for network (GIN) access only */
#define NCCL_WIN_CFT_COUNTED     0x08 /* register for counted CFT access only */
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

/* Values of ncclConfig_t.hostCftMode (added in 2.32). */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Bits of ncclConfig_t.nvlsHostMode: which host-side NVLink SHARP parts to
 * leave off (added in 2.32). */
typedef enum {
  ncclNvlsHostModeDefault = NCCL_CONFIG_UNDEF_INT,
  ncclNvlsHostModeEnable = 0,
  ncclNvlsHostModeDisableTransport = 1 << 0,
  ncclNvlsHostModeDisableSymmetricMultimem = 1 << 1,
  ncclNvlsHostModeDisable = INT_MAX
} ncclNvlsHostMode_t;

/* ---- Communicator configuration --------------------------------------- */

/* Options for a new communicator. Always start from NCCL_CONFIG_INITIALIZER,
 * then set the fields you care about; the first three fields identify the
 * struct's version and must be left alone. Fields are only ever appended: a
 * caller built against an older header passes a smaller size (80 for 2.28)
 * and the library uses defaults for the rest. Layout on LP64: sizeof 120. */
typedef struct ncclConfig_v23100 {
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
  int graphUsageMode;      /* 80: how CUDA graphs use the comm (added in 2.29) */
  int numRmaCtx;           /* 84: one-sided (RMA) contexts */
  int maxP2pPeers;         /* 88: peers one rank exchanges with (added in 2.30) */
  int graphStreamOrdering; /* 92: stream ordering inside captured graphs */
  int launchOrderImplicit; /* 96: launches follow the host call order (added in 2.31) */
  int numRmaSig;           /* 100: one-sided signal slots per context */
  int rmaEagerInit;        /* 104: set up one-sided resources at init */
  int hostCftMode;         /* 108: ncclHostCftMode_t (added in 2.32) */
  int nvlsHostMode;        /* 112: ncclNvlsHostMode_t bits */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                    \
  {                                                                                                \
    sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_INT /* blocking */, \
        NCCL_CONFIG_UNDEF_INT /* cgaClusterSize */, NCCL_CONFIG_UNDEF_INT /* minCTAs */,           \
        NCCL_CONFIG_UNDEF_INT /* maxCTAs */, NCCL_CONFIG_UNDEF_PTR /* netName */,                  \
        NCCL_CONFIG_UNDEF_INT /* splitShare */, NCCL_CONFIG_UNDEF_INT /* trafficClass */,          \
        NCCL_CONFIG_UNDEF_PTR /* commName */, NCCL_CONFIG_UNDEF_INT /* collnetEnable */,           \
        NCCL_CONFIG_UNDEF_INT /* CTAPolicy */, NCCL_CONFIG_UNDEF_INT /* shrinkShare */,            \
        NCCL_CONFIG_UNDEF_INT /* nvlsCTAs */, NCCL_CONFIG_UNDEF_INT /* nChannelsPerNetPeer */,     \
        NCCL_CONFIG_UNDEF_INT /* nvlinkCentricSched */,                                            \
        NCCL_CONFIG_UNDEF_INT /* graphUsageMode */, NCCL_CONFIG_UNDEF_INT /* numRmaCtx */,         \
        NCCL_CONFIG_UNDEF_INT /* maxP2pPeers */, NCCL_CONFIG_UNDEF_INT /* graphStreamOrdering */,  \
        NCCL_CONFIG_UNDEF_INT /* launchOrderImplicit */, NCCL_CONFIG_UNDEF_INT /* numRmaSig */,    \
        NCCL_CONFIG_UNDEF_INT /* rmaEagerInit */, NCCL_CONFIG_UNDEF_INT /* hostCftMode */,         \
        NCCL_CONFIG_UNDEF_INT /* nvlsHostMode */                                                   \
  }

/* One vendor-specific option of a collective call, as a key and a value;
 * options chain through `next` (NULL ends the list, no key twice). A library
 * ignores the keys of other vendors. Size 24. */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next; /*  0 */
  struct {
    int vendorId; /*  8: chosen by the vendor, non-zero, below 2^24 */
    int optionId; /* 12: the vendor's number for the option */
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val; /* 16 */
} ncclConfigExt_t;

/* Options of one collective call (the nccl*Config functions). Start from
 * NCCL_COLLCONFIG_INITIALIZER; set the same values on every rank; the struct
 * (and its ext list) must stay valid during the call. Fields are only ever
 * appended. Layout on LP64: sizeof 72. */
typedef struct ncclCollConfig_v23200 {
  size_t size;                       /*  0: sizeof the caller's struct */
  unsigned int magic;                /*  8: NCCL_API_MAGIC */
  unsigned int version;              /* 12: NCCL_VERSION_CODE of the caller's header */
  ncclConfigExt_t* ext;              /* 16: vendor options, or NULL */
  int minCTAs;                       /* 24: fewest thread blocks (UNDEF: the library picks) */
  int maxCTAs;                       /* 28: most thread blocks, at most the comm's maxCTAs */
  int nvlsCTAs;                      /* 32: thread blocks of NVLink SHARP algorithms */
  int cgaClusterSize;                /* 36: thread-block cluster size, alike within a group */
  const char* algSelection;          /* 40: algorithms allowed (NCCL_ALGO syntax); NULL/"": any */
  int forceAlgSelection;             /* 48: 1 (default): an unsatisfiable selection is an error */
  int CTAPolicy;                     /* 52: NCCL_CTA_POLICY_* bits; UNDEF: the comm's */
  uint64_t userProfilerTag;          /* 56: handed to profiler plugins as is; 0: none */
  cudaEvent_t launchCompletionEvent; /* 64: recorded once the launch is done, or NULL */
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                                                                \
  {                                                                                                \
    sizeof(ncclCollConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_PTR /* ext */,  \
        NCCL_CONFIG_UNDEF_INT /* minCTAs */, NCCL_CONFIG_UNDEF_INT /* maxCTAs */,                  \
        NCCL_CONFIG_UNDEF_INT /* nvlsCTAs */, NCCL_CONFIG_UNDEF_INT /* cgaClusterSize */,          \
        NCCL_CONFIG_UNDEF_PTR /* algSelection */, 1 /* forceAlgSelection */,                       \
        NCCL_CONFIG_UNDEF_INT /* CTAPolicy */, 0 /* userProfilerTag */,                            \
        NCCL_CONFIG_UNDEF_PTR /* launchCompletionEvent */                                          \
  }

/* What ncclGroupSimulateEnd reports. Start from NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;          /*  0: sizeof the caller's struct */
  unsigned int magic;   /*  8: 0x74685283 */
  unsigned int version; /* 12: NCCL_VERSION of the caller's header */
  float estimatedTime;  /* 16: predicted duration of the group, microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER                                                                  \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT }

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

/* A fresh token for growing comm (ncclCommGrow), made on the rank that will be
 * the grow's root. A comm holds at most one unused token; each serves one grow. */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);

/* A new communicator of nRanks ranks: comm's ranks (same rank numbers) plus
 * new ones. Existing ranks pass comm and rank -1, the root also the token of
 * ncclCommGetUniqueId, the others uniqueId NULL; new ranks pass comm NULL, the
 * token and their rank (comm's size .. nRanks-1). */
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                           ncclComm_t* newcomm, ncclConfig_t* config);

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

/* flags of ncclCommSuspend. */
#define NCCL_SUSPEND_MEM 0x01 /* give back the memory the comm can rebuild */

/* Stops using comm and, with NCCL_SUSPEND_MEM, frees the memory it can
 * rebuild; comm takes no operation until ncclCommResume restores it. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);

/* What ncclCommMemStats reports. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* bytes held that suspend can free */
  ncclStatGpuMemSuspended = 1, /* 1 while the memory is suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* bytes held that suspend keeps */
  ncclStatGpuMemTotal = 3      /* all bytes held */
} ncclCommMemStat_t;

ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

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

/* The buffer a window was registered with. */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

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

/* The collectives above with per-call options (ncclCollConfig_t); a NULL config
 * is the plain call. */
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                 cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                              cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                 const ncclCollConfig_t* config);
ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                  const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                     cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count,
                                ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                const ncclCollConfig_t* config);
ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                 const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t datatype, int root, ncclComm_t comm,
                              cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream, const ncclCollConfig_t* config);

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

/* ---- One-sided operations ----------------------------------------------
 * ncclPutSignal writes count elements of localbuff into peer's window peerWin
 * at byte offset peerWinOffset, then raises signal sigIdx of context ctx on
 * peer; ncclSignal raises the signal alone. ncclWaitSignal returns (in stream
 * order) once, for each descriptor, opCnt signals came from that peer; the data
 * of those puts is then in place. flags are reserved (0). */
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                            unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                         cudaStream_t stream);

/* Signals to wait for: opCnt of them from peer on (sigIdx, ctx). Size 16. */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                             cudaStream_t stream);

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

/* ---- Encryption of the library's TCP sockets ---------------------------- */

typedef enum {
  NCCL_ENCRYPTION_MODE_NONE = 0, /* plain text */
  NCCL_ENCRYPTION_MODE_PSK = 1   /* TLS with a pre-shared key */
} ncclEncryptionMode_t;

/* Start from NCCL_ENCRYPTION_CONFIG_INITIALIZER. Size 32. */
typedef struct ncclEncryptionConfig_v23200 {
  size_t size;          /*  0 */
  unsigned int magic;   /*  8: NCCL_API_MAGIC */
  unsigned int version; /* 12 */
  int mode;             /* 16: ncclEncryptionMode_t */
  const char* psk;      /* 24: the key, for NCCL_ENCRYPTION_MODE_PSK */
} ncclEncryptionConfig_t;

#define NCCL_ENCRYPTION_CONFIG_INITIALIZER                                                         \
  {                                                                                                \
    sizeof(ncclEncryptionConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_ENCRYPTION_MODE_NONE,  \
        NCCL_CONFIG_UNDEF_PTR                                                                      \
  }

ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t* config);
ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t* config);

/* ---- Parameters ---------------------------------------------------------
 * The library's settings (NCCL_* environment variables and the like), read by
 * name. A handle (ncclParamBind) is owned by the library; strings returned are
 * valid until the same call is made again on the same thread. */
typedef struct ncclParamHandle* ncclParamHandle_t;

ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
/* The value as text. */
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out);
/* The value's bytes (its text, with the terminating NUL) into out, at most
 * maxLen; *len = the bytes the whole value needs. */
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
/* The value of key as text and its length. */
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);
/* Every key the library knows. */
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);
/* Every parameter and its value into the log. */
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

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

/* ---- Device API additions of 2.32 (host side) -------------------------- */

typedef uint32_t ncclCftLeId;
typedef ncclCftLeId ncclCftLeId_t;

/* How ranks reach each other over the network from device code (GIN). */
typedef enum {
  NCCL_GIN_CONNECTION_NONE,
  NCCL_GIN_CONNECTION_FULL,
  NCCL_GIN_CONNECTION_RAIL,
  NCCL_GIN_CONNECTION_CUSTOM_STRIDE
} ncclGinConnectionType_t;

/* Network backends of device code; values are fixed by the network plugin ABI. */
typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4,
  NCCL_GIN_TYPE_EFA_GDA = 5,
  NCCL_GIN_MAX_TYPES = 6
} ncclGinType_t;

typedef enum {
  NCCL_CFT_TEAM_FLAT,
  NCCL_CFT_TEAM_HIER_MULTIMEM,
  NCCL_CFT_TEAM_HIER_LSA
} ncclCftTeamMode_t;

typedef enum { NCCL_CFT_NONE = 0x0, NCCL_CFT = 0x1, NCCL_CFT_MULTIMEM = 0x2 } ncclCftCap_t;

/* What a communicator offers, filled by ncclCommQueryProperties. Start from
 * NCCL_COMM_PROPERTIES_INITIALIZER. Size 152. */
typedef struct ncclCommProperties {
  size_t size;                               /*   0 */
  unsigned int magic;                        /*   8: NCCL_API_MAGIC */
  unsigned int version;                      /*  12 */
  int rank;                                  /*  16 */
  int nRanks;                                /*  20 */
  int cudaDev;                               /*  24: -1 without a GPU */
  int nvmlDev;                               /*  28: -1 without a GPU */
  bool deviceApiSupport;                     /*  32: ncclDevCommCreate works */
  bool multimemSupport;                      /*  33 */
  ncclGinType_t ginType;                     /*  36 */
  int nLsaTeams;                             /*  40 */
  bool hostRmaSupport;                       /*  44: ncclPutSignal and friends work */
  ncclGinType_t railedGinType;               /*  48 */
  uint64_t commHash;                         /*  56 */
  int ginMinStride;                          /*  64 */
  ncclGinConnectionType_t ginConnectionType; /* 68 */
  bool ginSupport[64];                       /*  72: by ncclGinType_t */
  size_t devCommRuntimeVersionSize;          /* 136 */
  bool cftSupport;                           /* 144 */
  bool cftMulticastSupport;                  /* 145 */
  bool cftCountedSupport;                    /* 146 */
} ncclCommProperties_t;

/* The same values as NCCL's initializer (every other field zero), spelled out so that -Wextra
 * stays quiet. */
#define NCCL_COMM_PROPERTIES_INITIALIZER                                                           \
  {                                                                                                \
    sizeof(ncclCommProperties_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, 0, 0, 0, 0, false, false,     \
        NCCL_GIN_TYPE_NONE, 0, false, NCCL_GIN_TYPE_NONE, 0, 0, NCCL_GIN_CONNECTION_NONE, {false}, \
        0, false, false, false                                                                     \
  }

/* Buffers of the network outbox / all-to-all inbox of device code. */
typedef struct ncclGinOutboxHandle {
  ncclDevResourceHandle bufHandle;
  uint32_t size_log2;
} ncclGinOutboxHandle;
typedef struct ncclGinInboxA2AHandle {
  ncclDevResourceHandle bufHandle;
  ncclGinSignal_t signals;
  uint32_t size_log2;
} ncclGinInboxA2AHandle;

ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t pncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);

/* Host-side addresses into a window: of the lsa rank's / peer's copy (a
 * pointer device code of this rank can use), of the multicast mapping. */
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t pncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t pncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                           ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void** outPtr);
ncclResult_t pncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                      void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t pncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);

/* The same places named by CFT load/store entries. */
ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
                                         size_t* leOffset);
ncclResult_t pncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
                                          size_t* leOffset);
ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft,
                                    ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset);
ncclResult_t pncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft,
                                     ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld,
                                     ncclCftLeId* leId, size_t* leOffset);
ncclResult_t pncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld,
                                      ncclCftLeId* leId, size_t* leOffset);

/* The CFT teams of comm (all ranks, or those of the multicast domain). */
ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode);
ncclTeam_t pncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode);
ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm);
ncclTeam_t pncclTeamCftMultimem(ncclComm_t comm);

ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                            ncclGinOutboxHandle* outHandle,
                                            ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                             ncclGinOutboxHandle* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                              ncclGinInboxA2AHandle* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                               ncclGinInboxA2AHandle* outHandle,
                                               ncclDevResourceRequirements_t* outReq);

#endif /* device API */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
