/* Named shared memory segments: see shm.h. */
#include "os/shm.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>
#include "util/log.h"

static ncclResult_t map_fd(int fd, const char* name, size_t len, void** ptr) {
  void* mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mem == MAP_FAILED) {
    WARN("mmap of shared memory %s (%zu bytes) failed: %s", name, len, strerror(errno));
    return ncclSystemError;
  }
  *ptr = mem;
  return ncclSuccess;
}

ncclResult_t os_shm_create(size_t len, char name[OS_SHM_NAME], void** ptr) {
  uint64_t rnd = 0;
  if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) rnd = (uint64_t)(uintptr_t)ptr ^ getpid();
  snprintf(name, OS_SHM_NAME, "/monel-%d-%016llx", (int)getpid(), (unsigned long long)rnd);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    WARN("shm_open(%s) failed: %s; is /dev/shm mounted and writable?", name, strerror(errno));
    return ncclSystemError;
  }
  if (ftruncate(fd, (off_t)len) != 0) {
    WARN("could not size shared memory %s to %zu bytes: %s (is /dev/shm full?)", name, len,
         strerror(errno));
    close(fd);
    shm_unlink(name);
    return ncclSystemError;
  }
  ncclResult_t res = map_fd(fd, name, len, ptr);
  if (res != ncclSuccess) shm_unlink(name);
  return res;
}

ncclResult_t os_shm_open(const char* name, size_t len, void** ptr) {
  int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) {
    WARN("shm_open(%s) of a peer's shared memory failed: %s", name, strerror(errno));
    return ncclSystemError;
  }
  return map_fd(fd, name, len, ptr);
}

void os_shm_unmap(void* ptr, size_t len) {
  if (ptr) munmap(ptr, len);
}

void os_shm_unlink(const char* name) {
  if (name && name[0]) shm_unlink(name);
}
