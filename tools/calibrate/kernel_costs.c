// kernel_costs.c — live per-operation costs of Linux kernel code paths, for tlblab model inputs.
//
// Build: cc -std=c11 -O2 -pthread -o kernel_costs kernel_costs.c
// Usage: kernel_costs [-R rounds] [-r runs_per_round] [-m min_ms_per_run] [-v] [name ...]
//
// Every benchmark pins the measured thread to CPU 0 and helpers to CPU 1. Iteration counts are
// calibrated once (doubling until one run lasts >= min_ms, which doubles as warm-up), then each
// round runs every selected benchmark (one warm-up run + runs_per_round timed runs), so
// benchmarks are interleaved at round granularity and slow drift hits them all alike.
// Statistics (median, p10, p90; linear interpolation) are over all timed runs of all rounds.
// Each run is timed with CLOCK_MONOTONIC and rdtsc; per-op = run time / iterations.
// /proc/interrupts TLB and CAL rows are read around every timed run and summed.
//
// See docs/calibration.md for what each benchmark means.

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>
#include <cpuid.h>

#define PAGE 4096UL
#define MAXCPU 64
#define MAXRUNS 1000

static int opt_rounds = 3, opt_runs = 10, opt_min_ms = 20, opt_verbose = 0;
static int ncpu_irq;  // columns in /proc/interrupts

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kernel_costs: error: ");
    vfprintf(stderr, fmt, ap);
    if (errno) fprintf(stderr, " (%s)", strerror(errno));
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline uint64_t tsc(void) {
    unsigned aux;
    return __rdtscp(&aux);
}

static void pin_self(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) die("sched_setaffinity(cpu %d)", cpu);
    if (sched_getcpu() != cpu) {
        sched_yield();
        if (sched_getcpu() != cpu) die("pinned to cpu %d but running on %d", cpu, sched_getcpu());
    }
}

// ---------- /proc/interrupts ----------
struct irq { uint64_t tlb[MAXCPU], cal[MAXCPU], res[MAXCPU]; };

static void read_irq(struct irq *r) {
    memset(r, 0, sizeof *r);
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f) die("open /proc/interrupts");
    char line[8192];
    if (!fgets(line, sizeof line, f)) die("read /proc/interrupts");
    if (!ncpu_irq) {
        for (char *p = line; (p = strstr(p, "CPU")); p += 3) ncpu_irq++;
        if (ncpu_irq > MAXCPU) ncpu_irq = MAXCPU;
    }
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ') p++;
        uint64_t *dst = NULL;
        if (!strncmp(p, "TLB:", 4)) dst = r->tlb;
        else if (!strncmp(p, "CAL:", 4)) dst = r->cal;
        else if (!strncmp(p, "RES:", 4)) dst = r->res;
        if (!dst) continue;
        p += 4;
        for (int c = 0; c < ncpu_irq; c++) dst[c] = strtoull(p, &p, 10);
    }
    fclose(f);
}

// steal time of cpu1 in USER_HZ ticks (/proc/stat, 8th value)
static uint64_t steal_cpu1(void) {
    FILE *f = fopen("/proc/stat", "r");
    char line[1024];
    uint64_t v[8] = {0};
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "cpu1 ", 5)) {
            sscanf(line + 5, "%lu %lu %lu %lu %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]);
            break;
        }
    fclose(f);
    return v[7];
}

// ---------- benchmark plumbing ----------
// A benchmark's run function performs `iters` operations and stores its own timed interval
// (so per-run setup/teardown such as mmap/munmap of the region can stay outside).
struct timing { uint64_t ns, cyc; };
#define T_START(t) do { (t)->ns = now_ns(); (t)->cyc = tsc(); } while (0)
#define T_STOP(t) do { uint64_t c_ = tsc(), n_ = now_ns(); (t)->ns = n_ - (t)->ns; (t)->cyc = c_ - (t)->cyc; } while (0)

struct bench {
    const char *name, *desc;
    void (*setup)(void);              // per round, e.g. start helper threads (may be NULL)
    void (*run)(long iters, struct timing *t);
    void (*teardown)(void);
    long max_iters;                   // cap for calibration (memory)
    int remote;                       // 1: expects 1 TLB IRQ/op on CPU 1; 2: 1 CAL IRQ/op on CPU 1
    // results
    long iters;
    int n;
    double ns[MAXRUNS], cyc[MAXRUNS], tlb1[MAXRUNS], cal1[MAXRUNS];  // per-run, per-op
    struct irq irq_sum;
    long irq_iters;
    int kept;
    double del_med;
    long bad;                         // benchmark-specific failure count (e.g. migrations that did not move)
};

static void irq_add(struct irq *sum, const struct irq *a, const struct irq *b) {
    for (int c = 0; c < ncpu_irq; c++) {
        sum->tlb[c] += b->tlb[c] - a->tlb[c];
        sum->cal[c] += b->cal[c] - a->cal[c];
        sum->res[c] += b->res[c] - a->res[c];
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double pct(const double *v, int n, double p) {
    double s[MAXRUNS];
    memcpy(s, v, n * sizeof *v);
    qsort(s, n, sizeof *s, cmp_d);
    double pos = p * (n - 1);
    int i = (int)pos;
    if (i >= n - 1) return s[n - 1];
    return s[i] + (pos - i) * (s[i + 1] - s[i]);
}

// ---------- helpers ----------
static volatile int spin_stop;
static volatile uint64_t spin_sink, spin_count;
static volatile int spin_cpu = -1;  // CPU the spinner last saw itself on  // spin_count: spinner progress
static pthread_t helper;
static int efd_a = -1, efd_b = -1;
static volatile long bad_global;

static void *spinner(void *arg) {
    (void)arg;
    pin_self(1);
    uint64_t x = 0;
    while (!spin_stop) {  // reads a volatile, bumps a counter; never enters the kernel
        x += spin_sink;
        if ((++spin_count & 0xfffff) == 0) spin_cpu = sched_getcpu();
    }
    spin_sink = x;
    return NULL;
}

static void *blocker(void *arg) {
    (void)arg;
    pin_self(1);
    uint64_t v;
    // blocks until teardown writes to efd_a
    if (read(efd_a, &v, 8) != 8) die("blocker read");
    return NULL;
}

static unsigned char *dn_region;   // 2 pages: page 0 is the loop page, page 1 stays populated
static unsigned char *dn_page;

static void dn_map(void) {
    // 2 MiB-aligned so both pages share one PTE table; page 1 stays populated so the PTE table
    // never becomes empty (CONFIG_PT_RECLAIM would otherwise free it on MADV_DONTNEED, making
    // the flush a freed_tables flush that also IPIs lazy CPUs).
    size_t len = 4UL << 20;
    unsigned char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) die("mmap");
    unsigned char *a = (unsigned char *)(((uintptr_t)r + (2UL << 20) - 1) & ~((2UL << 20) - 1));
    if (madvise(a, 2 * PAGE, MADV_NOHUGEPAGE)) die("madvise NOHUGEPAGE");
    dn_region = r;
    dn_page = a;
    dn_page[PAGE] = 1;
}
static void dn_unmap(void) { munmap(dn_region, 4UL << 20); }

// ---------- benchmarks ----------
static void run_null_syscall(long n, struct timing *t) {
    T_START(t);
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
    T_STOP(t);
}

static void fault_run(long n, struct timing *t, int write) {
    size_t len = (size_t)n * PAGE;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die("mmap %zu", len);
    if (madvise(p, len, MADV_NOHUGEPAGE)) die("madvise NOHUGEPAGE");
    uint64_t sum = 0;
    T_START(t);
    if (write)
        for (long i = 0; i < n; i++) p[i * PAGE] = 1;
    else
        for (long i = 0; i < n; i++) sum += ((volatile unsigned char *)p)[i * PAGE];
    T_STOP(t);
    spin_sink = sum;
    munmap(p, len);
}
static void run_fault_zero(long n, struct timing *t) { fault_run(n, t, 0); }
static void run_fault_anon(long n, struct timing *t) { fault_run(n, t, 1); }

static void run_madvise(long n, struct timing *t) {
    volatile unsigned char *p = dn_page;
    T_START(t);
    for (long i = 0; i < n; i++) {
        p[0] = 1;
        madvise((void *)dn_page, PAGE, MADV_DONTNEED);
    }
    T_STOP(t);
}

static void setup_madvise_local(void) { dn_map(); }
static void teardown_madvise_local(void) { dn_unmap(); }

static void setup_remote_spin(void) {
    dn_map();
    spin_stop = 0;
    if (pthread_create(&helper, NULL, spinner, NULL)) die("pthread_create");
    usleep(20000);  // let it start spinning on CPU 1
}
static void teardown_remote_spin(void) {
    spin_stop = 1;
    pthread_join(helper, NULL);
    dn_unmap();
}

static void setup_remote_idle(void) {
    dn_map();
    efd_a = eventfd(0, 0);
    if (efd_a < 0) die("eventfd");
    if (pthread_create(&helper, NULL, blocker, NULL)) die("pthread_create");
    usleep(20000);  // let it block
}
static void teardown_remote_idle(void) {
    uint64_t one = 1;
    if (write(efd_a, &one, 8) != 8) die("eventfd write");
    pthread_join(helper, NULL);
    close(efd_a);
    efd_a = -1;
    dn_unmap();
}

// ping-pong over two eventfds: initiator writes a, waits on b; partner reads a, writes b.
// Value 2 on a means "exit".
static void partner_loop(void) {
    uint64_t v, one = 1;
    for (;;) {
        if (read(efd_a, &v, 8) != 8) _exit(3);
        if (v >= 2) return;
        if (write(efd_b, &one, 8) != 8) _exit(3);
    }
}
static void run_pingpong(long n, struct timing *t) {
    uint64_t v, one = 1;
    T_START(t);
    for (long i = 0; i < n; i++) {
        if (write(efd_a, &one, 8) != 8) die("pingpong write");
        if (read(efd_b, &v, 8) != 8) die("pingpong read");
    }
    T_STOP(t);
}
static pid_t pp_child;
static void setup_pp_process(void) {
    efd_a = eventfd(0, 0);
    efd_b = eventfd(0, 0);
    if (efd_a < 0 || efd_b < 0) die("eventfd");
    pp_child = fork();
    if (pp_child < 0) die("fork");
    if (pp_child == 0) {
        pin_self(0);
        partner_loop();
        _exit(0);
    }
}
static void teardown_pp_process(void) {
    uint64_t two = 2;
    if (write(efd_a, &two, 8) != 8) die("eventfd write");
    int st;
    waitpid(pp_child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("pingpong child failed (status %d)", st);
    close(efd_a);
    close(efd_b);
}
static void *pp_thread_fn(void *arg) {
    (void)arg;
    pin_self(0);
    partner_loop();
    return NULL;
}
static void setup_pp_thread(void) {
    efd_a = eventfd(0, 0);
    efd_b = eventfd(0, 0);
    if (efd_a < 0 || efd_b < 0) die("eventfd");
    if (pthread_create(&helper, NULL, pp_thread_fn, NULL)) die("pthread_create");
}
static void teardown_pp_thread(void) {
    uint64_t two = 2;
    if (write(efd_a, &two, 8) != 8) die("eventfd write");
    pthread_join(helper, NULL);
    close(efd_a);
    close(efd_b);
}

static void mmap_munmap(long n, struct timing *t, int pages) {
    T_START(t);
    for (long i = 0; i < n; i++) {
        unsigned char *p = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) die("mmap");
        for (int k = 0; k < pages; k++) p[k * PAGE] = 1;
        munmap(p, pages * PAGE);
    }
    T_STOP(t);
}
static void run_mmap1(long n, struct timing *t) { mmap_munmap(n, t, 1); }
static void run_mmap16(long n, struct timing *t) { mmap_munmap(n, t, 16); }

static long migrate_bad;
static void run_migrate(long n, struct timing *t) {
    cpu_set_t s[2];
    for (int c = 0; c < 2; c++) { CPU_ZERO(&s[c]); CPU_SET(c, &s[c]); }
    int cur = sched_getcpu();
    T_START(t);
    for (long i = 0; i < n; i++) {
        int to = !cur;
        if (sched_setaffinity(0, sizeof s[to], &s[to])) die("sched_setaffinity");
        cur = sched_getcpu();
        if (cur != to) migrate_bad++;
    }
    T_STOP(t);
    pin_self(0);  // outside the timed part
}

static void run_fork(long n, struct timing *t) {
    T_START(t);
    for (long i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) die("fork");
        if (p == 0) _exit(0);
        int st;
        if (waitpid(p, &st, 0) != p) die("waitpid");
    }
    T_STOP(t);
}

// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) IPIs every other CPU currently running a thread of
// this mm and waits for it: a bare synchronous IPI round trip, no TLB work.
#include <linux/membarrier.h>
static void setup_membarrier(void) {
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0))
        die("membarrier register");
    spin_stop = 0;
    if (pthread_create(&helper, NULL, spinner, NULL)) die("pthread_create");
    usleep(20000);
}
static void teardown_membarrier(void) {
    spin_stop = 1;
    pthread_join(helper, NULL);
}
static void run_membarrier(long n, struct timing *t) {
    T_START(t);
    for (long i = 0; i < n; i++)
        if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) die("membarrier");
    T_STOP(t);
}

static void run_cpuid(long n, struct timing *t) {
    unsigned a, b, c, d, x = 0;
    T_START(t);
    for (long i = 0; i < n; i++) {
        __cpuid_count(0, 0, a, b, c, d);
        x += a;
    }
    T_STOP(t);
    spin_sink = x;
}

static struct bench benches[] = {
    {.name = "null_syscall", .desc = "syscall(SYS_getppid) round trip", .run = run_null_syscall},
    {.name = "minor_fault_zero", .desc = "first read touch of a fresh anon page (zero page mapped), per page",
     .run = run_fault_zero, .max_iters = 1L << 19},
    {.name = "minor_fault_anon", .desc = "first write touch of a fresh anon page (alloc+zero, 4K), per page",
     .run = run_fault_anon, .max_iters = 1L << 19},
    {.name = "madvise_local", .desc = "write 1 byte + madvise(4K, DONTNEED), single thread",
     .setup = setup_madvise_local, .run = run_madvise, .teardown = teardown_madvise_local},
    {.name = "madvise_remote1", .desc = "as madvise_local, sibling thread spinning on CPU 1",
     .setup = setup_remote_spin, .run = run_madvise, .teardown = teardown_remote_spin, .remote = 1},
    {.name = "ipi_remote_idle", .desc = "as madvise_local, sibling thread blocked in read() (CPU 1 idle)",
     .setup = setup_remote_idle, .run = run_madvise, .teardown = teardown_remote_idle},
    {.name = "pingpong_process", .desc = "eventfd ping-pong round trip, 2 processes on CPU 0",
     .setup = setup_pp_process, .run = run_pingpong, .teardown = teardown_pp_process},
    {.name = "pingpong_thread", .desc = "eventfd ping-pong round trip, 2 threads on CPU 0",
     .setup = setup_pp_thread, .run = run_pingpong, .teardown = teardown_pp_thread},
    {.name = "mmap_munmap_1", .desc = "mmap 1 page + write + munmap", .run = run_mmap1},
    {.name = "mmap_munmap_16", .desc = "mmap 16 pages + write each + munmap", .run = run_mmap16},
    {.name = "migrate", .desc = "sched_setaffinity to the other CPU (verified by sched_getcpu), per migration",
     .run = run_migrate},
    {.name = "fork_exit", .desc = "fork + child _exit(0) + waitpid", .run = run_fork},
    // extras (not model inputs themselves; they explain the others on a VM)
    {.name = "membarrier_ipi", .desc = "membarrier(PRIVATE_EXPEDITED), sibling spinning on CPU 1: 1 bare IPI round trip",
     .setup = setup_membarrier, .run = run_membarrier, .teardown = teardown_membarrier, .remote = 2},
    {.name = "vmexit_cpuid", .desc = "CPUID instruction (unconditional VM exit in a guest): hypervisor round trip",
     .run = run_cpuid},
};
#define NB (int)(sizeof benches / sizeof benches[0])

static void calibrate(struct bench *b) {
    struct timing t;
    long n = 1;
    uint64_t target = (uint64_t)opt_min_ms * 1000000ull;
    for (;;) {
        b->run(n, &t);
        if (t.ns >= target) break;
        if (b->max_iters && n >= b->max_iters) break;
        // grow toward the target with margin; at least double
        long next = t.ns ? (long)(n * (double)target * 1.3 / t.ns) : n * 2;
        if (next < 2 * n) next = 2 * n;
        if (next > 64 * n) next = 64 * n;
        if (b->max_iters && next > b->max_iters) next = b->max_iters;
        n = next;
    }
    b->iters = n;
}

static void run_round(struct bench *b, int first) {
    pin_self(0);
    if (b->setup) b->setup();
    if (first) calibrate(b);
    struct timing t;
    b->run(b->iters, &t);  // warm-up run
    migrate_bad = 0;
    for (int r = 0; r < opt_runs; r++) {
        struct irq a, z;
        uint64_t st0 = steal_cpu1();
        read_irq(&a);
        uint64_t sc0 = spin_count;
        b->run(b->iters, &t);
        uint64_t sc1 = spin_count;
        read_irq(&z);
        uint64_t st1 = steal_cpu1();
        irq_add(&b->irq_sum, &a, &z);
        b->irq_iters += b->iters;
        b->ns[b->n] = (double)t.ns / b->iters;
        b->cyc[b->n] = (double)t.cyc / b->iters;
        b->tlb1[b->n] = (double)(z.tlb[1] - a.tlb[1]) / b->iters;
        b->cal1[b->n] = (double)(z.cal[1] - a.cal[1]) / b->iters;
        if (opt_verbose)
            printf("# run %-17s %3d %12.1f ns %12.1f cyc  tlb1/it %.3f cal1/it %.3f"
                   "  spinner_loops/us %.1f steal1_ticks %lu main_cpu %d spinner_cpu %d\n", b->name, b->n, b->ns[b->n],
                   b->cyc[b->n], b->tlb1[b->n], b->cal1[b->n], (double)(sc1 - sc0) * 1000.0 / t.ns,
                   (unsigned long)(st1 - st0), sched_getcpu(), spin_cpu);
        b->n++;
    }
    b->bad += migrate_bad;
    if (b->teardown) b->teardown();
}

// ---------- machine info ----------
static double tsc_ghz;
static void measure_tsc(void) {
    double v[7];
    for (int i = 0; i < 7; i++) {
        uint64_t n0 = now_ns(), c0 = tsc();
        struct timespec d = {0, 100 * 1000 * 1000};
        nanosleep(&d, NULL);
        uint64_t c1 = tsc(), n1 = now_ns();
        v[i] = (double)(c1 - c0) / (double)(n1 - n0);
    }
    tsc_ghz = pct(v, 7, 0.5);
    printf("tsc_ghz %.6f (median of 7 x 100 ms vs CLOCK_MONOTONIC; min %.6f max %.6f)\n", tsc_ghz,
           pct(v, 7, 0), pct(v, 7, 1));
}

static void machine_info(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    if (f) {
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) || !strncmp(line, "cpu family", 10) ||
                !strncmp(line, "model\t", 6) || !strncmp(line, "stepping", 8) ||
                !strncmp(line, "microcode", 9)) {
                printf("cpuinfo %s", line);
                if (!strncmp(line, "microcode", 9)) break;
            }
        fclose(f);
    }
    unsigned a, b, c, d;
    __cpuid(0, a, b, c, d);
    char vendor[13];
    memcpy(vendor, &b, 4); memcpy(vendor + 4, &d, 4); memcpy(vendor + 8, &c, 4); vendor[12] = 0;
    __cpuid(1, a, b, c, d);
    unsigned fam = (a >> 8) & 0xf, model = (a >> 4) & 0xf, ext = (a >> 16) & 0xf;
    if (fam == 6 || fam == 15) model |= ext << 4;
    printf("cpuid vendor %s family %u model 0x%x stepping %u hypervisor_bit %u\n", vendor, fam, model,
           a & 0xf, (c >> 31) & 1);
    if ((c >> 31) & 1) {
        __cpuid(0x40000000, a, b, c, d);
        char sig[13];
        memcpy(sig, &b, 4); memcpy(sig + 4, &c, 4); memcpy(sig + 8, &d, 4); sig[12] = 0;
        printf("cpuid 0x40000000 signature '%s' max_leaf 0x%x\n", sig, a);
        if (!strcmp(sig, "KVMKVMKVM")) {
            __cpuid(0x40000001, a, b, c, d);
            printf("cpuid kvm_features 0x%x: steal_time=%u pv_eoi=%u pv_unhalt=%u "
                   "pv_tlb_flush=%u pv_send_ipi=%u pv_sched_yield=%u\n",
                   a, (a >> 5) & 1, (a >> 6) & 1, (a >> 7) & 1, (a >> 9) & 1, (a >> 11) & 1,
                   (a >> 13) & 1);
        }
    }
    printf("nproc %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "R:r:m:v")) != -1) {
        switch (opt) {
        case 'R': opt_rounds = atoi(optarg); break;
        case 'r': opt_runs = atoi(optarg); break;
        case 'm': opt_min_ms = atoi(optarg); break;
        case 'v': opt_verbose = 1; break;
        default:
            fprintf(stderr, "usage: %s [-R rounds] [-r runs_per_round] [-m min_ms] [-v] [name...]\n", argv[0]);
            return 2;
        }
    }
    if (opt_rounds < 1 || opt_runs < 1 || opt_rounds * opt_runs > MAXRUNS || opt_min_ms < 1) {
        fprintf(stderr, "kernel_costs: bad -R/-r/-m\n");
        return 2;
    }
    int sel[NB];
    int nsel = 0;
    for (int i = 0; i < NB; i++) sel[i] = optind >= argc;
    for (int a = optind; a < argc; a++) {
        int found = 0;
        for (int i = 0; i < NB; i++)
            if (!strcmp(argv[a], benches[i].name)) sel[i] = found = 1;
        if (!found) { fprintf(stderr, "kernel_costs: unknown benchmark '%s'\n", argv[a]); return 2; }
    }
    for (int i = 0; i < NB; i++) nsel += sel[i];
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        fprintf(stderr, "kernel_costs: need at least 2 online CPUs (0 and 1)\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    machine_info();
    pin_self(0);
    measure_tsc();
    struct irq dummy;
    read_irq(&dummy);
    printf("config rounds %d runs_per_round %d min_ms %d benchmarks %d\n", opt_rounds, opt_runs,
           opt_min_ms, nsel);

    for (int r = 0; r < opt_rounds; r++) {
        // rotate the order each round
        for (int k = 0; k < NB; k++) {
            int i = (k + r) % NB;
            if (sel[i]) run_round(&benches[i], r == 0);
        }
        fprintf(stderr, "round %d/%d done\n", r + 1, opt_rounds);
    }

    printf("\n%-17s %10s %10s %10s %10s %10s %10s %5s %9s  %s\n", "# name", "median_ns", "p10_ns",
           "p90_ns", "med_cyc", "p10_cyc", "p90_cyc", "runs", "iters", "description");
    for (int i = 0; i < NB; i++) {
        struct bench *b = &benches[i];
        if (!sel[i]) continue;
        printf("%-17s %10.1f %10.1f %10.1f %10.0f %10.0f %10.0f %5d %9ld  %s\n", b->name,
               pct(b->ns, b->n, .5), pct(b->ns, b->n, .1), pct(b->ns, b->n, .9),
               pct(b->cyc, b->n, .5), pct(b->cyc, b->n, .1), pct(b->cyc, b->n, .9), b->n, b->iters,
               b->desc);
    }
    printf("\n# machine-readable: RESULT name median_ns p10_ns p90_ns median_cycles runs iters\n");
    for (int i = 0; i < NB; i++) {
        struct bench *b = &benches[i];
        if (!sel[i]) continue;
        printf("RESULT %s %.1f %.1f %.1f %.0f %d %ld\n", b->name, pct(b->ns, b->n, .5),
               pct(b->ns, b->n, .1), pct(b->ns, b->n, .9), pct(b->cyc, b->n, .5), b->n, b->iters);
    }
    // Runs of the remote benchmarks in which CPU 1 received >= 0.99 IPIs per operation: on this
    // VM the sibling on CPU 1 sometimes does not run for tens of ms (no progress, no steal time),
    // and then no IPI is sent; those runs measure the local path only.
    printf("\n# remote benchmarks, runs with >= 0.99 IPIs/op received on CPU 1 only:\n"
           "# RESULT_DELIVERED name median_ns p10_ns p90_ns median_cycles runs_kept runs_total\n");
    for (int i = 0; i < NB; i++) {
        struct bench *b = &benches[i];
        if (!sel[i] || !b->remote) continue;
        double kn[MAXRUNS], kc[MAXRUNS];
        int k = 0;
        for (int r = 0; r < b->n; r++)
            if ((b->remote == 1 ? b->tlb1[r] : b->cal1[r]) >= 0.99) { kn[k] = b->ns[r]; kc[k] = b->cyc[r]; k++; }
        b->kept = k;
        if (k) {
            b->del_med = pct(kn, k, .5);
            printf("RESULT_DELIVERED %s %.1f %.1f %.1f %.0f %d %d\n", b->name, b->del_med, pct(kn, k, .1),
                   pct(kn, k, .9), pct(kc, k, .5), k, b->n);
        } else {
            printf("RESULT_DELIVERED %s none 0 %d\n", b->name, b->n);
        }
    }
    printf("\n# /proc/interrupts deltas summed over timed runs: IRQ name total_iters TLB[cpu] CAL[cpu] RES[cpu] "
           "tlb/it[cpu] cal/it[cpu] res/it[cpu]\n");
    for (int i = 0; i < NB; i++) {
        struct bench *b = &benches[i];
        if (!sel[i]) continue;
        printf("IRQ %s %ld", b->name, b->irq_iters);
        for (int c = 0; c < ncpu_irq; c++) printf(" TLB%d=%llu", c, (unsigned long long)b->irq_sum.tlb[c]);
        for (int c = 0; c < ncpu_irq; c++) printf(" CAL%d=%llu", c, (unsigned long long)b->irq_sum.cal[c]);
        for (int c = 0; c < ncpu_irq; c++) printf(" RES%d=%llu", c, (unsigned long long)b->irq_sum.res[c]);
        for (int c = 0; c < ncpu_irq; c++)
            printf(" tlb%d/it=%.4f", c, (double)b->irq_sum.tlb[c] / b->irq_iters);
        for (int c = 0; c < ncpu_irq; c++)
            printf(" cal%d/it=%.4f", c, (double)b->irq_sum.cal[c] / b->irq_iters);
        for (int c = 0; c < ncpu_irq; c++)
            printf(" res%d/it=%.4f", c, (double)b->irq_sum.res[c] / b->irq_iters);
        printf("\n");
        if (b->run == run_migrate) printf("MIGRATE_FAILED %ld of %ld\n", b->bad, b->irq_iters);
    }

    // derived figures from medians (differences of medians; see docs/calibration.md)
    struct bench *B[NB];
    for (int i = 0; i < NB; i++) B[i] = sel[i] ? &benches[i] : NULL;
#define MED(i) pct(B[i]->ns, B[i]->n, .5)
    printf("\n# derived (ns; cycles at %.4f GHz), from medians\n", tsc_ghz);
    if (B[3] && B[2])
        printf("DERIVED madvise_dontneed_plus_local_flush (d-c) %.1f ns %.0f cyc\n", MED(3) - MED(2),
               (MED(3) - MED(2)) * tsc_ghz);
    if (B[4] && B[3] && B[4]->kept)
        printf("DERIVED remote_shootdown_1_target (e_delivered-d) %.1f ns %.0f cyc\n", B[4]->del_med - MED(3),
               (B[4]->del_med - MED(3)) * tsc_ghz);
    if (B[5] && B[3])
        printf("DERIVED idle_sibling_extra (k-d) %.1f ns %.0f cyc\n", MED(5) - MED(3),
               (MED(5) - MED(3)) * tsc_ghz);
    if (B[6] && B[7])
        printf("DERIVED mm_switch_extra ((f-g)/2) %.1f ns %.0f cyc\n", (MED(6) - MED(7)) / 2,
               (MED(6) - MED(7)) / 2 * tsc_ghz);
    if (B[7])
        printf("DERIVED same_mm_switch_plus_syscalls (g/2) %.1f ns %.0f cyc\n", MED(7) / 2,
               MED(7) / 2 * tsc_ghz);
    if (B[9] && B[8])
        printf("DERIVED mmap16_minus_mmap1_per_extra_page ((h16-h1)/15) %.1f ns %.0f cyc\n",
               (MED(9) - MED(8)) / 15, (MED(9) - MED(8)) / 15 * tsc_ghz);
    if (B[4] && B[3] && B[12] && B[4]->kept && B[12]->kept) {
        double x = B[4]->del_med - MED(3) - (B[12]->del_med - MED(0));
        printf("DERIVED shootdown_minus_bare_ipi ((e_del-d)-(membarrier_del-null_syscall)) %.1f ns %.0f cyc\n",
               x, x * tsc_ghz);
    }
    if (B[12] && B[0] && B[12]->kept)
        printf("DERIVED bare_ipi_round_trip (membarrier_del-null_syscall) %.1f ns %.0f cyc\n",
               B[12]->del_med - MED(0), (B[12]->del_med - MED(0)) * tsc_ghz);
    if (benches[10].n && benches[10].bad) {
        fprintf(stderr, "kernel_costs: %ld migrations did not land on the requested CPU\n", benches[10].bad);
        return 1;
    }
    return 0;
}
