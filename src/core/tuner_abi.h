/* SPDX-License-Identifier: BSD-3-Clause */
/* NCCL's tuner plugin ABI, versions 2-7 (docs/PLUGINS.md): the tables a library exports as
 * ncclTunerPlugin_vN. Layouts are NCCL's; every member is documented where core/tuner.c uses it. */
#ifndef MONEL_CORE_TUNER_ABI_H
#define MONEL_CORE_TUNER_ABI_H
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

#define TUNER_NALGO  7       /* NCCL's algorithm ids: TREE 0 ... PAT 6 */
#define TUNER_NPROTO 3       /* LL 0, LL128 1, SIMPLE 2 */
#define TUNER_IGNORE (-1.0f) /* a cost-table entry NCCL will not pick */

typedef void (*tuner_logger)(int level, unsigned long flags, const char* file, int line,
                             const char* fmt, ...);

struct tuner_nvl_v5 {
  int n_domains, min_ranks, max_ranks;
};
/* [compcap][scale] tables: 4 compute-capability rows up to v6, 5 in v7. */
struct tuner_consts_v5 {
  double base_lat[TUNER_NALGO][TUNER_NPROTO];
  double hw_lat[3][TUNER_NALGO][TUNER_NPROTO];
  double ll_max_bw[4][3];
  double ring_ll128_bw[4][3];
  double tree_ll128_bw[4][3];
  double tree_bw[4][3];
  double nvls_tree_bw[4][3];
};
struct tuner_consts_v7 {
  double base_lat[TUNER_NALGO][TUNER_NPROTO];
  double hw_lat[3][TUNER_NALGO][TUNER_NPROTO];
  double ll_max_bw[5][3];
  double ring_ll128_bw[5][3];
  double tree_ll128_bw[5][3];
  double tree_bw[5][3];
  double nvls_tree_bw[5][3];
};

struct tuner_v2 {
  const char* name;
  ncclResult_t (*init)(size_t nranks, size_t nnodes, tuner_logger log, void** ctx);
  ncclResult_t (*get_coll_info)(void* ctx, int coll, size_t bytes, int collnet, int nvls,
                                int pipe_ops, int* algo, int* proto, int* nchannels);
  ncclResult_t (*destroy)(void* ctx);
};
/* v3 and v4: the cost table (float[7][3] passed as float**); v4 adds regBuff. */
struct tuner_v3 {
  const char* name;
  ncclResult_t (*init)(size_t nranks, size_t nnodes, tuner_logger log, void** ctx);
  ncclResult_t (*get_coll_info)(void* ctx, int coll, size_t bytes, int pipe_ops, float** table,
                                int nalgo, int nproto, int* nchannels);
  ncclResult_t (*destroy)(void* ctx);
};
struct tuner_v4 {
  const char* name;
  ncclResult_t (*init)(size_t nranks, size_t nnodes, tuner_logger log, void** ctx);
  ncclResult_t (*get_coll_info)(void* ctx, int coll, size_t bytes, int pipe_ops, float** table,
                                int nalgo, int nproto, int reg_buff, int* nchannels);
  ncclResult_t (*destroy)(void* ctx);
};
/* v5-v7: init with the comm's id, NVL domains and the cost constants; v6+ getChunkSize. */
struct tuner_v7 {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes, tuner_logger log,
                       struct tuner_nvl_v5* nvl, void* consts);
  ncclResult_t (*get_coll_info)(void* ctx, int coll, size_t bytes, int pipe_ops, float** table,
                                int nalgo, int nproto, int reg_buff, int* nchannels);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*get_chunk_size)(void* ctx, int coll, size_t bytes, int algo, int proto,
                                 int nchannels, size_t* chunk); /* v6+, optional */
};

#endif
