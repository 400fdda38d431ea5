/*
 * fault_footprint: what an anonymous write fault costs by how many pages a loop cycles through
 * (the kernel model's mechanism hot-frames; tlblab-pathcost's minor_fault_anon_hot and
 * minor_fault_anon are its 256-page refault and its 4,096 fresh pages). Pinned to CPU 0; THP
 * refused for the regions; nothing system-wide changed.
 *
 *   cc -O2 -o fault_footprint tools/calibrate/fault_footprint.c && ./fault_footprint
 *
 * Per page count N, the median of 21 runs, in ns per fault: (refault) N pages written, then all
 * of them freed by an untimed MADV_DONTNEED, again and again, so that each fault gets a frame
 * this CPU freed N to 2N frames before (its per-CPU free list is last in, first out); (fresh) N
 * pages of a new mapping written once, the mapping then unmapped, untimed.
 * Exit status: 0, or 1 when a system call fails.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
#define RUNS 21

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static char *map(size_t pages) {
  char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); exit(1); }
  if (madvise(p, pages * PAGE, MADV_NOHUGEPAGE)) { perror("madvise"); exit(1); }
  return p;
}

int main(void) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  if (sched_setaffinity(0, sizeof cpus, &cpus)) { perror("sched_setaffinity"); return 1; }
  printf("| pages | refault, ns | fresh, ns |\n|---|---|---|\n");
  const size_t ns[] = {16, 64, 256, 1024, 4096, 16384};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    size_t n = ns[k], reps = n < 256 ? 4096 / n : n < 4096 ? 16 : 3;
    /* A written page at each end keeps the PTE tables. */
    char *g = map(n + 2), *r = g + PAGE;
    g[0] = 1;
    g[(n + 1) * PAGE] = 1;
    double v[RUNS], w[RUNS];
    for (int run = 0; run < RUNS; run++) {
      double took = 0;
      for (size_t rep = 0; rep < reps; rep++) {
        double t = now_ns();
        for (size_t j = 0; j < n; j++) r[j * PAGE] = 1;
        took += now_ns() - t;
        if (madvise(r, n * PAGE, MADV_DONTNEED)) { perror("madvise"); return 1; }
      }
      v[run] = took / reps / n;
      char *f = map(n);
      double t = now_ns();
      for (size_t j = 0; j < n; j++) f[j * PAGE] = 1;
      w[run] = (now_ns() - t) / n;
      munmap(f, n * PAGE);
    }
    munmap(g, (n + 2) * PAGE);
    qsort(v, RUNS, sizeof *v, cmp);
    qsort(w, RUNS, sizeof *w, cmp);
    printf("| %zu | %.0f | %.0f |\n", n, v[RUNS / 2], w[RUNS / 2]);
  }
  return 0;
}
