/* SPDX-License-Identifier: BSD-3-Clause */
/* A standalone driver for the fuzz targets where libFuzzer is not at hand: replays every file of
 * the corpus directories given, then runs random inputs (random lengths up to 4 KB, and inputs
 * that keep a corpus file's first bytes) until SECONDS pass. Usage: fuzz_X SECONDS DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  static uint8_t buf[4096];
  double end = now() + (argc > 1 ? atof(argv[1]) : 5);
  long replayed = 0, random_runs = 0;
  for (int a = 2; a < argc; a++) {
    DIR* d = opendir(argv[a]);
    struct dirent* e;
    while (d && (e = readdir(d)) != NULL) {
      char path[4096];
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
      FILE* f = fopen(path, "rb");
      if (f == NULL) continue;
      size_t n = fread(buf, 1, sizeof buf, f);
      fclose(f);
      LLVMFuzzerTestOneInput(buf, n);
      replayed++;
    }
    if (d) closedir(d);
  }
  while (now() < end) {
    size_t n = 0;
    if (getrandom(&n, sizeof n, 0) != sizeof n) break;
    n %= sizeof buf + 1;
    if (getrandom(buf, n, 0) != (ssize_t)n) break;
    LLVMFuzzerTestOneInput(buf, n);
    random_runs++;
  }
  printf("%s: %ld corpus inputs, %ld random inputs, no crash\n", argv[0], replayed, random_runs);
  return 0;
}
