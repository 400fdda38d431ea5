/*
 * touch_work: what touching one byte of each 4 KiB page costs, per page, by how many pages a
 * loop goes over again and again: the work per page of the kernel model's touches
 * (docs/workloads.md, "Work per page") and whether STLB hits add to it (mechanism
 * stlb-pipelined). Pinned to CPU 0; transparent huge pages refused for the region.
 *
 *   cc -O2 -o touch_work tools/calibrate/touch_work.c
 *   ./touch_work zero     loads of never-written pages (every one the zero page)
 *   ./touch_work load     loads of written pages (each its own page)
 *   ./touch_work store    stores to written pages
 *
 * Prints, per page count, the best of 11 runs of about 4e7 page touches, in ns per page.
 * Exit status: 0, or 2 on a bad argument, 1 when a system call fails.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  enum { ZERO, LOAD, STORE } mode;
  if (argc == 2 && !strcmp(argv[1], "zero")) mode = ZERO;
  else if (argc == 2 && !strcmp(argv[1], "load")) mode = LOAD;
  else if (argc == 2 && !strcmp(argv[1], "store")) mode = STORE;
  else {
    fprintf(stderr, "usage: %s zero|load|store\n", argv[0]);
    return 2;
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  if (sched_setaffinity(0, sizeof cpus, &cpus)) { perror("sched_setaffinity"); return 1; }
  const size_t page = 4096, most = 8192;
  volatile char *p = mmap(NULL, most * page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); return 1; }
  if (madvise((void *)p, most * page, MADV_NOHUGEPAGE)) { perror("madvise"); return 1; }
  /* Fault every page in: the zero page for reads of never-written memory, else a page each. */
  for (size_t i = 0; i < most; i++) {
    if (mode == ZERO) (void)p[i * page];
    else p[i * page] = 1;
  }
  const size_t counts[] = {8, 16, 32, 48, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
  for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
    size_t n = counts[k], passes = (size_t)(4e7 / n);
    double best = 1e99;
    for (int run = 0; run < 11; run++) {
      double start = now_ns();
      for (size_t r = 0; r < passes; r++)
        for (size_t i = 0; i < n; i++) {
          if (mode == STORE) p[i * page] = 1;
          else (void)p[i * page];
        }
      double per_page = (now_ns() - start) / (double)(passes * n);
      if (per_page < best) best = per_page;
    }
    printf("%s %5zu pages: %.3f ns/page (best of 11 runs of %zu passes)\n",
           mode == ZERO ? "zero " : mode == LOAD ? "load " : "store", n, best, passes);
  }
  return 0;
}
