/*
 * page_reuse: the 4 KiB-page reuse profile of one program's user references, from a Valgrind
 * lackey trace on stdin (valgrind --tool=lackey --trace-mem=yes).
 *
 * For three streams (instruction fetches; loads and stores; both, as a unified STLB sees
 * them) it counts references, page changes (a reference to another page than the stream's
 * previous one) and the LRU stack distance of every page change: how many other pages the
 * stream referenced since it last referenced this one (Mattson et al., 1970). A fully
 * associative LRU structure of E entries misses exactly the references whose distance is E or
 * more, plus first references, so the histogram gives the program's miss ratio at every TLB
 * size at once. Distances are counted with a Fenwick tree over the time of each page's last
 * reference, renumbered when it fills.
 *
 * Output: one block per stream (text), the distance histogram in power-of-two buckets and the
 * miss ratio at the sizes of hardware.md's TLBs. Usage (tools/calibrate/page_reuse.sh):
 *   valgrind --tool=lackey --trace-mem=yes --log-fd=3 PROGRAM 3>&1 >/dev/null | page_reuse
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TREE_SIZE (1u << 24) /* timestamps before a renumbering */
#define BUCKETS 24           /* distance buckets: 0, 1, 2-3, 4-7, ..., 2^22 and more */

struct stream {
	const char *name;
	/* open-addressing map: page -> time of its last reference (0: empty slot) */
	uint64_t *pages;
	uint32_t *last;
	uint64_t slots, used;
	uint32_t *tree; /* Fenwick tree: 1 at the time of each page's last reference */
	uint32_t now;
	uint64_t prev_page;
	uint64_t refs, changes, cold;
	uint64_t hist[BUCKETS];
};

static void tree_add(uint32_t *tree, uint32_t i, int32_t v)
{
	for (; i < TREE_SIZE; i += i & -i)
		tree[i] += (uint32_t)v;
}

static uint32_t tree_sum(const uint32_t *tree, uint32_t i)
{
	uint32_t s = 0;
	for (; i > 0; i -= i & -i)
		s += tree[i];
	return s;
}

static uint64_t hash(uint64_t page)
{
	page ^= page >> 33;
	page *= 0xff51afd7ed558ccdULL;
	page ^= page >> 33;
	return page;
}

static void init(struct stream *s, const char *name)
{
	memset(s, 0, sizeof *s);
	s->name = name;
	s->slots = 1u << 20;
	s->pages = calloc(s->slots, sizeof *s->pages);
	s->last = calloc(s->slots, sizeof *s->last);
	s->tree = calloc(TREE_SIZE, sizeof *s->tree);
	s->prev_page = UINT64_MAX;
	if (!s->pages || !s->last || !s->tree) {
		fprintf(stderr, "page_reuse: out of memory\n");
		exit(2);
	}
}

/* The slot of `page`: its own, or the empty one where it would go. Pages are stored + 1 so
 * that 0 marks an empty slot. */
static uint64_t slot_of(const struct stream *s, uint64_t page)
{
	uint64_t i = hash(page) & (s->slots - 1);
	while (s->pages[i] && s->pages[i] != page + 1)
		i = (i + 1) & (s->slots - 1);
	return i;
}

static int by_time(const void *a, const void *b)
{
	uint32_t x = **(uint32_t *const *)a, y = **(uint32_t *const *)b;
	return (x > y) - (x < y);
}

/* Renumber every page's last time 1..used in the same order and rebuild the tree. */
static void renumber(struct stream *s)
{
	uint32_t **order = malloc(s->used * sizeof *order);
	uint64_t n = 0;
	for (uint64_t i = 0; i < s->slots; i++)
		if (s->pages[i])
			order[n++] = &s->last[i];
	qsort(order, n, sizeof *order, by_time);
	memset(s->tree, 0, TREE_SIZE * sizeof *s->tree);
	for (uint64_t i = 0; i < n; i++) {
		*order[i] = (uint32_t)(i + 1);
		tree_add(s->tree, (uint32_t)(i + 1), 1);
	}
	s->now = (uint32_t)n;
	free(order);
}

static void grow(struct stream *s)
{
	uint64_t old_slots = s->slots, *old_pages = s->pages;
	uint32_t *old_last = s->last;
	s->slots *= 2;
	s->pages = calloc(s->slots, sizeof *s->pages);
	s->last = calloc(s->slots, sizeof *s->last);
	if (!s->pages || !s->last) {
		fprintf(stderr, "page_reuse: out of memory\n");
		exit(2);
	}
	for (uint64_t i = 0; i < old_slots; i++)
		if (old_pages[i]) {
			uint64_t j = slot_of(s, old_pages[i] - 1);
			s->pages[j] = old_pages[i];
			s->last[j] = old_last[i];
		}
	free(old_pages);
	free(old_last);
}

static void reference(struct stream *s, uint64_t page)
{
	s->refs++;
	if (page == s->prev_page)
		return;
	s->prev_page = page;
	s->changes++;
	if (s->now + 1 >= TREE_SIZE)
		renumber(s);
	uint64_t i = slot_of(s, page);
	uint32_t t = ++s->now;
	if (!s->pages[i]) {
		s->cold++;
		s->pages[i] = page + 1;
		s->last[i] = t;
		tree_add(s->tree, t, 1);
		if (++s->used * 2 > s->slots)
			grow(s);
		return;
	}
	uint32_t then = s->last[i];
	/* pages referenced after `then`, before now (this page's own mark is at `then`) */
	uint64_t d = tree_sum(s->tree, t - 1) - tree_sum(s->tree, then);
	int b = 0;
	while (b < BUCKETS - 1 && d >= (1ull << b))
		b++;
	s->hist[b]++;
	tree_add(s->tree, then, -1);
	tree_add(s->tree, t, 1);
	s->last[i] = t;
}

/* References whose distance is `entries` or more, plus first references: a fully
 * associative LRU structure of that many entries misses them (bucket bounds are powers of
 * two, so sizes between are interpolated within their bucket, linearly). */
static double misses(const struct stream *s, double entries)
{
	double m = (double)s->cold;
	for (int b = 0; b < BUCKETS; b++) {
		double lo = b == 0 ? 0 : (double)(1ull << (b - 1)), hi = (double)(1ull << b);
		if (lo >= entries)
			m += (double)s->hist[b];
		else if (hi > entries)
			m += (double)s->hist[b] * (hi - entries) / (hi - lo);
	}
	return m;
}

static void print(const struct stream *s, uint64_t instructions)
{
	printf("stream %s\n", s->name);
	printf("  references %llu, page changes %llu, distinct pages %llu\n",
	       (unsigned long long)s->refs, (unsigned long long)s->changes,
	       (unsigned long long)s->used);
	printf("  page changes per 1000 instructions %.3f\n",
	       1000.0 * (double)s->changes / (double)instructions);
	printf("  distance histogram of page changes (bucket: distances, count, share)\n");
	printf("    first %llu %.5f\n", (unsigned long long)s->cold,
	       (double)s->cold / (double)s->changes);
	for (int b = 0; b < BUCKETS; b++) {
		if (!s->hist[b])
			continue;
		uint64_t lo = b == 0 ? 0 : 1ull << (b - 1), hi = (1ull << b) - 1;
		printf("    %llu-%llu %llu %.5f\n", (unsigned long long)lo, (unsigned long long)hi,
		       (unsigned long long)s->hist[b], (double)s->hist[b] / (double)s->changes);
	}
	static const double sizes[] = {4, 8, 32, 64, 128, 512, 1024, 1536, 2048, 3072, 4096};
	printf("  fully associative LRU misses (entries: per 1000 instructions, per page change)\n");
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		double m = misses(s, sizes[k]);
		printf("    %g: %.4f %.5f\n", sizes[k], 1000.0 * m / (double)instructions,
		       m / (double)s->changes);
	}
}

int main(void)
{
	static struct stream code, data, both;
	init(&code, "code (instruction fetches)");
	init(&data, "data (loads, stores, modifies)");
	init(&both, "unified (fetches and data, one stream)");
	char line[256];
	uint64_t instructions = 0, malformed = 0, lineno = 0;
	while (fgets(line, sizeof line, stdin)) {
		lineno++;
		char kind;
		unsigned long long addr;
		if (line[0] == 'I' && line[1] == ' ')
			kind = 'I';
		else if (line[0] == ' ' && (line[1] == 'L' || line[1] == 'S' || line[1] == 'M'))
			kind = line[1];
		else
			continue; /* valgrind's own messages */
		if (sscanf(line + 2, " %llx,", &addr) != 1) {
			if (malformed++ < 5)
				fprintf(stderr, "page_reuse: stdin line %llu: no address: %s",
					(unsigned long long)lineno, line);
			continue;
		}
		uint64_t page = (uint64_t)addr >> 12;
		if (kind == 'I') {
			instructions++;
			reference(&code, page);
		} else {
			reference(&data, page);
		}
		reference(&both, page);
	}
	if (!instructions) {
		fprintf(stderr, "page_reuse: stdin: no lackey instruction lines "
				"(run valgrind --tool=lackey --trace-mem=yes)\n");
		return 2;
	}
	printf("instructions %llu, malformed lines %llu\n", (unsigned long long)instructions,
	       (unsigned long long)malformed);
	print(&code, instructions);
	print(&data, instructions);
	print(&both, instructions);
	return malformed ? 1 : 0;
}
