/* The independent reference for bench/syscall_vs_c.sh: the audit investigations' raw getpid() loop,
 * clock_gettime(CLOCK_MONOTONIC) around N calls of syscall(SYS_getpid), repeated, printing the
 * median ns per call of the samples after one warm-up sample. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int samples = argc > 2 ? atoi(argv[2]) : 10;
	double v[1024];
	if (samples < 1 || samples > 1024 || n < 1)
		return 2;
	for (int s = 0; s < samples + 1; s++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			syscall(SYS_getpid);
		double t1 = now_ns();
		if (s > 0)
			v[s - 1] = (t1 - t0) / n;
	}
	qsort(v, samples, sizeof v[0], cmp);
	double med = samples % 2 ? v[samples / 2] : (v[samples / 2 - 1] + v[samples / 2]) / 2;
	printf("%.4f\n", med);
	return 0;
}
