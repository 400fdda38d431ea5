/*
 * invlpg_reach: what an INVLPG costs on this machine and what it leaves of other translations,
 * seen from user space through the kernel's own flushes (docs/hardware-model.md, "INVLPG that
 * drops everything"; tlblab-pathcost's dontneed_16, mprotect_2_near/_far and reread_after_*
 * are the same methods, run by every host-preset build). Pinned to CPU 0; no setting changed.
 *
 *   cc -O2 -o invlpg_reach tools/calibrate/invlpg_reach.c && ./invlpg_reach
 *
 * Prints, each the median of 31 runs:
 *  1. ns per mprotect (read-only and read-write by turns) of a VMA of N present pages, alone
 *     between guard pages: up to 33 pages Linux flushes page by page (INVLPG), from 34 fully;
 *  2. the same two PTE changes in a 34-page VMA, flushed by two INVLPGs (pages 0 and 1
 *     present) or fully (pages 0 and 33): their difference less two INVLPGs is what the flush
 *     by INVLPG costs beyond the instructions;
 *  3. ns per page to read K other present pages right after an mprotect that flushed nothing,
 *     one page, or everything, less the same reads with no syscall before them;
 *  4. ns more that the first getppid() after each costs than a getppid() after getppid().
 * Exit status: 0, or 1 when a system call fails.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define RUNS 31

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v) {
  qsort(v, RUNS, sizeof *v, cmp);
  return v[RUNS / 2];
}

/* A VMA of n pages between PROT_NONE guards (so that nothing merges with it); the pages in
 * `present` (a bitmask over the first 64, or all when all_present) are written. */
static char *region(int n, unsigned long long present, int all_present) {
  char *g = mmap(NULL, (size_t)(n + 4) * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g == MAP_FAILED) { perror("mmap"); exit(1); }
  char *r = g + 2 * PAGE;
  if (mmap(r, (size_t)n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
           -1, 0) == MAP_FAILED) { perror("mmap"); exit(1); }
  if (madvise(r, (size_t)n * PAGE, MADV_NOHUGEPAGE)) { perror("madvise"); exit(1); }
  for (int i = 0; i < n; i++)
    if (all_present || (i < 64 && (present >> i & 1))) r[(size_t)i * PAGE] = 1;
  return r;
}

static void toggle(char *r, int n, long i) {
  if (mprotect(r, (size_t)n * PAGE, (i & 1) ? PROT_READ | PROT_WRITE : PROT_READ)) {
    perror("mprotect");
    exit(1);
  }
}

/* ns per call of `iters` mprotects of r (n pages), median of RUNS. */
static double per_call(char *r, int n, long iters) {
  double v[RUNS];
  for (int run = 0; run < RUNS; run++) {
    double t = now_ns();
    for (long i = 0; i < iters; i++) toggle(r, n, i);
    v[run] = (now_ns() - t) / iters;
  }
  return median(v);
}

int main(void) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  if (sched_setaffinity(0, sizeof cpus, &cpus)) { perror("sched_setaffinity"); return 1; }

  printf("1. mprotect of N present pages, ns per call\n\n| N | ns |\n|---|---|\n");
  const int ns[] = {1, 2, 4, 8, 16, 24, 32, 33, 34, 40, 64, 128, 256};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    char *r = region(ns[k], 0, 1);
    printf("| %d | %.0f |\n", ns[k], per_call(r, ns[k], 20000 / (ns[k] < 8 ? 1 : ns[k] / 8)));
  }

  char *near = region(34, 0x3, 0), *far = region(34, 1ull | 1ull << 33, 0);
  double n2 = per_call(near, 34, 4000), f2 = per_call(far, 34, 4000);
  printf("\n2. two PTE changes in a 34-page VMA: by two INVLPGs %.0f ns, by a full flush %.0f ns,"
         " difference %.0f ns\n", n2, f2, n2 - f2);

  /* 3 and 4: after each kind of flush. */
  char *none = region(1, 0, 0), *one = region(1, 0, 1), *full = region(64, 0, 1);
  char *others = region(256, 0, 1);
  struct { const char *name; char *r; int n; } kinds[] = {
      {"nothing flushed", none, 1}, {"one page (INVLPG)", one, 1}, {"everything (CR3)", full, 64}};
  const int ks[] = {16, 64, 256};
  volatile char sink;
  printf("\n3. reads of K other pages right after it, ns per page more than the reads alone\n\n"
         "| flushed | K = 16 | 64 | 256 |\n|---|---|---|---|\n");
  double alone[3];
  for (int q = 0; q < 3; q++) {
    double v[RUNS];
    for (int run = 0; run < RUNS; run++) {
      double t = now_ns();
      for (int i = 0; i < 1000; i++)
        for (int j = 0; j < ks[q]; j++) sink = others[(size_t)j * PAGE];
      v[run] = (now_ns() - t) / 1000;
    }
    alone[q] = median(v);
  }
  for (int k = 0; k < 3; k++) {
    printf("| %s |", kinds[k].name);
    double op = per_call(kinds[k].r, kinds[k].n, 1000);
    for (int q = 0; q < 3; q++) {
      double v[RUNS];
      for (int run = 0; run < RUNS; run++) {
        double t = now_ns();
        for (long i = 0; i < 1000; i++) {
          toggle(kinds[k].r, kinds[k].n, i);
          for (int j = 0; j < ks[q]; j++) sink = others[(size_t)j * PAGE];
        }
        v[run] = (now_ns() - t) / 1000;
      }
      printf(" %.2f |", (median(v) - op - alone[q]) / ks[q]);
    }
    printf("\n");
  }
  (void)sink;

  printf("\n4. the first getppid() after it, ns more than a getppid() after getppid()\n\n");
  double v[RUNS];
  for (int run = 0; run < RUNS; run++) {
    double t = now_ns();
    for (int i = 0; i < 2000; i++) syscall(SYS_getppid);
    v[run] = (now_ns() - t) / 2000;
  }
  double ppid = median(v);
  for (int k = 0; k < 3; k++) {
    double op = per_call(kinds[k].r, kinds[k].n, 1000);
    for (int run = 0; run < RUNS; run++) {
      double t = now_ns();
      for (long i = 0; i < 1000; i++) {
        toggle(kinds[k].r, kinds[k].n, i);
        syscall(SYS_getppid);
      }
      v[run] = (now_ns() - t) / 1000;
    }
    printf("- %s: %+.0f ns\n", kinds[k].name, median(v) - op - ppid);
  }
  return 0;
}
