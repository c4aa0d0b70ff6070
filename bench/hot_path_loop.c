/* The independent reference for bench/hot_paths_vs_c.sh: one lmbench-style loop per operation,
 * clock_gettime(CLOCK_MONOTONIC) around N operations, repeated, printing the median ns per
 * operation of the samples after one warm-up sample.
 *
 * Usage: hot_path_loop OP N SAMPLES DIR, OP one of read write stat open-close pipe fork
 * fault-anon. DIR holds the file stat and open-close use. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
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

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	const char *op = argv[1];
	long n = atol(argv[2]);
	int samples = atoi(argv[3]);
	char path[4096];
	snprintf(path, sizeof path, "%s/hot_path_loop.%d", argv[4], getpid());
	double v[1024];
	if (samples < 1 || samples > 1024 || n < 1)
		return 2;
	int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
	int f = open(path, O_CREAT | O_RDWR, 0600);
	if (zero < 0 || null < 0 || f < 0)
		die("open");
	int to_child[2], to_parent[2];
	pid_t echo = -1;
	if (!strcmp(op, "pipe")) {
		if (pipe(to_child) || pipe(to_parent))
			die("pipe");
		echo = fork();
		if (echo == 0) {
			char b;
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			while (read(to_child[0], &b, 1) == 1 && write(to_parent[1], &b, 1) == 1)
				;
			_exit(0);
		}
	}
	char b = 0;
	struct stat st;
	for (int s = 0; s < samples + 1; s++) {
		char *map = NULL;
		if (!strcmp(op, "fault-anon")) {
			map = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (map == MAP_FAILED)
				die("mmap");
			madvise(map, n * 4096, MADV_NOHUGEPAGE);
		}
		double t0 = now_ns();
		for (long i = 0; i < n; i++) {
			if (!strcmp(op, "read")) {
				if (read(zero, &b, 1) != 1)
					die("read");
			} else if (!strcmp(op, "write")) {
				if (write(null, &b, 1) != 1)
					die("write");
			} else if (!strcmp(op, "stat")) {
				if (stat(path, &st))
					die("stat");
			} else if (!strcmp(op, "open-close")) {
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				if (fd < 0 || close(fd))
					die("open");
			} else if (!strcmp(op, "pipe")) {
				if (write(to_child[1], &b, 1) != 1 || read(to_parent[0], &b, 1) != 1)
					die("pipe");
			} else if (!strcmp(op, "fork")) {
				pid_t p = fork();
				if (p == 0)
					_exit(0);
				if (p < 0 || waitpid(p, NULL, 0) != p)
					die("fork");
			} else if (!strcmp(op, "fault-anon")) {
				((volatile char *)map)[i * 4096] = 1;
			} else {
				return 2;
			}
		}
		double t1 = now_ns();
		if (map)
			munmap(map, n * 4096);
		if (s > 0)
			v[s - 1] = (t1 - t0) / n;
	}
	if (echo > 0) {
		kill(echo, SIGKILL);
		waitpid(echo, NULL, 0);
	}
	unlink(path);
	qsort(v, samples, sizeof v[0], cmp);
	double med = samples % 2 ? v[samples / 2] : (v[samples / 2 - 1] + v[samples / 2]) / 2;
	printf("%.4f\n", med);
	return 0;
}
