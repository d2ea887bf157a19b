/* Choosing the network of this process. */
#include "transport/net.h"

ncclResult_t net_get(const struct net** out, int* dev) {
  *out = &net_tcp;
  *dev = 0;
  return ncclSuccess;
}
