// The lab's fault probe as a C loop (crates/lab/src/speed.rs does the same in-process): seven
// runs, each a fresh private anonymous mapping of PAGES pages with huge pages refused, one byte
// written per page (a first-touch fault: mm/memory.c do_anonymous_page()); prints each run's ns
// per fault. Build: cc -O2 -o probe probe.c; run: ./probe 4096
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: probe PAGES\n");
        return 2;
    }
    for (int r = 0; r < 7; r++) {
        size_t len = (size_t)n * 4096;
        char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return perror("mmap"), 1;
        madvise(p, len, MADV_NOHUGEPAGE);
        double t = now();
        for (long i = 0; i < n; i++) p[(size_t)i * 4096] = 1;
        printf("%.0f ", (now() - t) / n);
        munmap(p, len);
    }
    printf("\n");
    return 0;
}
