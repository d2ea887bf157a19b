/* SPDX-License-Identifier: BSD-3-Clause */
/* The primitive verbs every algorithm is written with. A step of a schedule names one verb and
 * the chunk it works on; the engines execute the verbs (cpu/ with memcpy and reductions over a
 * transport's FIFO, device/ with GPU loads and stores). Compiles as C and as CUDA. */
#ifndef MONEL_ALGO_PRIM_H
#define MONEL_ALGO_PRIM_H

#ifdef __CUDACC__
#define ALGO_HD __host__ __device__
#else
#define ALGO_HD
#endif

enum verb {
  VERB_SEND,                  /* send my input chunk */
  VERB_RECV,                  /* receive into my output chunk */
  VERB_RECV_REDUCE_SEND,      /* receive, reduce with my input, send on */
  VERB_RECV_REDUCE_COPY_SEND, /* receive, reduce with my input, store to output, send on */
  VERB_RECV_COPY_SEND,        /* receive, store to output, send on */
  VERB_COPY,                  /* copy my input to my output */
  VERB_COPY_SEND,             /* copy my input to my output and send it */
  VERB_RECV_REDUCE_COPY,      /* receive, reduce with my input, store to output */
  VERB_NONE
};

/* What a verb does, as bits of verb_traits(): receives a chunk from the previous rank, reduces it
 * with my input, stores a result to my output, sends a chunk on. A verb without VERB_RECVS reads
 * my input instead; one that receives without VERB_REDUCES passes the received chunk on. In a
 * tree (algo/tree.h) a verb that reduces receives from the children and one that only receives,
 * from the parent; one that stores sends down to the children and one that does not, up to the
 * parent. */
enum { VERB_RECVS = 1, VERB_REDUCES = 2, VERB_STORES = 4, VERB_SENDS = 8 };

ALGO_HD static inline int verb_traits(enum verb v) {
  switch (v) {
  case VERB_SEND:
    return VERB_SENDS;
  case VERB_RECV:
    return VERB_RECVS | VERB_STORES;
  case VERB_RECV_REDUCE_SEND:
    return VERB_RECVS | VERB_REDUCES | VERB_SENDS;
  case VERB_RECV_REDUCE_COPY_SEND:
    return VERB_RECVS | VERB_REDUCES | VERB_STORES | VERB_SENDS;
  case VERB_RECV_COPY_SEND:
    return VERB_RECVS | VERB_STORES | VERB_SENDS;
  case VERB_COPY:
    return VERB_STORES;
  case VERB_COPY_SEND:
    return VERB_STORES | VERB_SENDS;
  case VERB_RECV_REDUCE_COPY:
    return VERB_RECVS | VERB_REDUCES | VERB_STORES;
  default:
    return 0;
  }
}

struct step {
  enum verb verb;
  int chunk; /* which of the nranks chunks of the current block */
};

#endif
