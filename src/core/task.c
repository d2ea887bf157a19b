/* Names of operations, as logs and errors print them. */
#include "core/task.h"

const char* coll_name(enum coll_kind coll) {
  static const char* names[COLL_COUNT] = {"AllReduce",     "Broadcast", "Reduce",    "AllGather",
                                          "ReduceScatter", "AlltoAll",  "AlltoAllv", "Gather",
                                          "Scatter",       "Send",      "Recv"};
  return (unsigned)coll < COLL_COUNT ? names[coll] : "unknown";
}
