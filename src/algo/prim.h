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

struct step {
  enum verb verb;
  int chunk; /* which of the nranks chunks of the current block */
};

#endif
