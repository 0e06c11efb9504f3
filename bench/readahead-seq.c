/* Two sequential passes over N anonymous pages (bench/readahead-live.sh): the first writes each
 * page (distinct, compressible, no zero bytes), the second reads one byte of each. Under a memory
 * cgroup smaller than N pages the second pass faults its pages back from swap, with the kernel's
 * swap readahead. Prints the pages and the sum it read (so the reads are not optimised out). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4096;
	const long ps = 4096;
	const char pat[] = "sequential readahead ";
	unsigned char *m = mmap(NULL, n * ps, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	for (long p = 0; p < n; p++)
		for (long j = 0; j < ps; j++)
			m[p * ps + j] = (unsigned char)(pat[(j + p) % 21] ^ (unsigned char)p) | 1;
	unsigned long sum = 0;
	for (long p = 0; p < n; p++)
		sum += ((volatile unsigned char *)m)[p * ps];
	printf("pages %ld sum %lu\n", n, sum);
	return 0;
}
