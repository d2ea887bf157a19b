/* Named shared memory segments (/dev/shm): one process creates a segment under a fresh name,
 * others map it by that name; the creator unlinks the name once every peer has mapped it, so
 * nothing is left behind after a normal or a failed run that got that far. */
#ifndef MONEL_OS_SHM_H
#define MONEL_OS_SHM_H
#include <stddef.h>
#include "nccl.h"

#define OS_SHM_NAME 48

/* Create and map a zeroed segment of len bytes; its name (for os_shm_open) goes to name. */
ncclResult_t os_shm_create(size_t len, char name[OS_SHM_NAME], void** ptr);
/* Map the segment `name` of len bytes created by another process. */
ncclResult_t os_shm_open(const char* name, size_t len, void** ptr);
void os_shm_unmap(void* ptr, size_t len);
void os_shm_unlink(const char* name);

#endif
