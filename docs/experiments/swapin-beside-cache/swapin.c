// Swap-in fault latency with and without page cache beside it (docs/BENCHMARKS.md, "A swap-in
// beside page cache: colder kernel data, not a missing path"). Run by run.sh inside a memory
// cgroup with a fresh zram swap.
//
//   swapin ANON_PAGES FILE_PAGES FILE_SHARE ACCESSES SEED [FILE]
//
// Fills ANON_PAGES private anonymous pages, each with a word of its own (zram stores them as
// same-filled: no compression, no allocation), maps FILE (FILE_PAGES pages) shared, read-only,
// MADV_RANDOM, then makes ACCESSES uniform random reads: a FILE_SHARE of them of the file's
// pages, the rest of the anonymous pages. Before each anonymous read, mincore(2) says whether
// the page is resident; a read of one that is not (a swap-in) is timed. Prints the swap-ins'
// p50/p90/p99 in ns, and the p50 of those right after a file read that missed the page cache.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000ull + t.tv_nsec;
}
static uint64_t state;
static uint64_t rnd(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}
static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
static uint64_t pct(uint64_t *v, size_t n, int p) {
    return n ? v[n * p / 100] : 0;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: swapin ANON_PAGES FILE_PAGES FILE_SHARE ACCESSES SEED [FILE]\n");
        return 2;
    }
    size_t n = atol(argv[1]), f = atol(argv[2]), acc = atol(argv[4]), ps = 4096;
    double share = atof(argv[3]);
    state = (uint64_t)atol(argv[5]) | 1;
    if (n == 0 || acc == 0 || (f && argc < 7)) {
        fprintf(stderr, "swapin: need anonymous pages, accesses and a file\n");
        return 2;
    }
    char *a = mmap(0, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return perror("mmap"), 1;
    madvise(a, n * ps, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 512; k++) ((uint64_t *)(a + i * ps))[k] = 0x5a5a000000000000ull | (i + 1);
    char *fm = 0;
    if (f) {
        int fd = open(argv[6], O_RDONLY | O_NOFOLLOW);
        if (fd < 0) return perror("open"), 1;
        fm = mmap(0, f * ps, PROT_READ, MAP_SHARED, fd, 0);
        if (fm == MAP_FAILED) return perror("mmap file"), 1;
        madvise(fm, f * ps, MADV_RANDOM);
    }
    uint64_t *lat = malloc(acc * 8), *after = malloc(acc * 8);
    if (!lat || !after) return 1;
    size_t nl = 0, na = 0, file_reads = 0, file_major = 0;
    int prev_major = 0;
    unsigned char vec;
    volatile uint64_t sink = 0;
    for (size_t i = 0; i < acc; i++) {
        if (f && (rnd() % 1000000) < share * 1e6) {
            size_t p = rnd() % f;
            mincore(fm + p * ps, ps, &vec);
            prev_major = !(vec & 1);
            file_major += prev_major;
            file_reads++;
            sink += *(volatile uint64_t *)(fm + p * ps);
            continue;
        }
        size_t p = rnd() % n;
        mincore(a + p * ps, ps, &vec);
        if (vec & 1) {
            sink += *(volatile uint64_t *)(a + p * ps);
        } else {
            uint64_t t = now();
            sink += *(volatile uint64_t *)(a + p * ps);
            lat[nl++] = now() - t;
            if (prev_major) after[na++] = lat[nl - 1];
        }
        prev_major = 0;
    }
    qsort(lat, nl, 8, cmp);
    qsort(after, na, 8, cmp);
    printf("swapins %zu p50 %lu p90 %lu p99 %lu after_file_major %zu p50 %lu file_reads %zu "
           "file_major %zu\n",
           nl, pct(lat, nl, 50), pct(lat, nl, 90), pct(lat, nl, 99), na, pct(after, na, 50),
           file_reads, file_major);
    return 0;
}
