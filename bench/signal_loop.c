/* The reference for bench/lmbench_gaps.sh signal, mirroring what lmbench's lat_sig catch times (written
 * for syscost, no lmbench code): a loop of kill(getpid(), SIGUSR1) caught by a handler that
 * counts, and lat_sig's "cost of sending", a loop of kill(getpid(), 0), which lat_sig subtracts
 * from the first. Variants tell whether syscost's way differs: tgkill to the calling thread
 * (syscost's ipc --op signal), a second thread in the process, dirty AVX registers.
 *
 * Usage: signal_loop HOW N SAMPLES, HOW one of kill, send, tgkill, kill-thread, tgkill-thread,
 * kill-avx. Prints the median ns per operation of SAMPLES samples after one warm-up sample. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "the kill-avx variant uses x86-64 AVX2 instructions"
#endif

static volatile unsigned long caught;

static void handler(int sig)
{
	(void)sig;
	caught++;
}

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

static void *idle(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: signal_loop HOW N SAMPLES\n");
		return 2;
	}
	const char *how = argv[1];
	long n = atol(argv[2]);
	int samples = atoi(argv[3]);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return perror("sigaction"), 1;
	int tg = strstr(how, "tgkill") != NULL;
	int send = strcmp(how, "send") == 0;
	if (strstr(how, "thread")) {
		pthread_t t;
		if (pthread_create(&t, NULL, idle, NULL))
			return perror("pthread_create"), 1;
	}
	int avx = strstr(how, "avx") != NULL;
	pid_t pid = getpid();
	pid_t tid = (pid_t)syscall(SYS_gettid);
	double *per = calloc(samples + 1, sizeof(double));
	for (int s = 0; s <= samples; s++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++) {
			if (avx)
				__asm__ volatile("vpxor %%ymm8, %%ymm8, %%ymm8\n\tvpcmpeqd %%ymm8, %%ymm8, %%ymm8" ::: "xmm8");
			if (send)
				kill(pid, 0);
			else if (tg)
				syscall(SYS_tgkill, pid, tid, SIGUSR1);
			else
				kill(pid, SIGUSR1);
		}
		per[s] = (now_ns() - t0) / n;
	}
	qsort(per + 1, samples, sizeof(double), cmp);
	printf("%.2f\n", per[1 + samples / 2]);
	return caught == (send ? 0 : (unsigned long)n * (samples + 1)) ? 0 : 1;
}
