/* The reference for bench/lmbench_gaps.sh fork: why syscost's `proc --op fork` reads lower than
 * lmbench's lat_proc fork. Both time fork + child exit + waitpid; lat_proc's child calls
 * exit(1), syscost's _exit. This loop does either, so the difference is measured, not assumed.
 * (Written for syscost; no lmbench code.)
 *
 * Usage: fork_exit exit|_exit N SAMPLES. Prints the median ns per fork of SAMPLES samples after
 * one warm-up sample. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
	if (argc != 4 || (strcmp(argv[1], "exit") && strcmp(argv[1], "_exit"))) {
		fprintf(stderr, "usage: fork_exit exit|_exit N SAMPLES\n");
		return 2;
	}
	int libc_exit = strcmp(argv[1], "exit") == 0;
	long n = atol(argv[2]);
	int samples = atoi(argv[3]);
	double *per = calloc(samples + 1, sizeof(double));
	for (int s = 0; s <= samples; s++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++) {
			pid_t pid = fork();
			if (pid < 0)
				return perror("fork"), 1;
			if (pid == 0) {
				if (libc_exit)
					exit(1);
				_exit(0);
			}
			if (waitpid(pid, NULL, 0) != pid)
				return perror("waitpid"), 1;
		}
		per[s] = (now_ns() - t0) / n;
	}
	qsort(per + 1, samples, sizeof(double), cmp);
	printf("%.0f\n", per[1 + samples / 2]);
	return 0;
}
