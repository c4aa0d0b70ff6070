/* The independent reference for bench/uprobe_vs_c.sh: a minimal program that attaches a uprobe
 * (perf_event_open, uprobe PMU) to its own target function, whose first instruction is a nop,
 * a push or a ret, calls it N times per sample, and prints the median M calls/s of the samples
 * after one warm-up. Usage: uprobe_loop nop|push|ret uprobe|uretprobe CALLS SAMPLES */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__asm__(".text\n.globl t_nop\n.type t_nop,@function\n.p2align 4\nt_nop: nop\n ret\n"
	".globl t_push\n.type t_push,@function\n.p2align 4\nt_push: push %rbp\n pop %rbp\n ret\n"
	".globl t_ret\n.type t_ret,@function\n.p2align 4\nt_ret: ret\n");
void t_nop(void), t_push(void), t_ret(void);

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static unsigned long file_offset(void *fn)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long a = (unsigned long)fn, s, e, off;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %*s %lx", &s, &e, &off) == 3 && a >= s && a < e) {
			fclose(f);
			return a - s + off;
		}
	exit(2);
}

int main(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	void (*fn)(void) = !strcmp(argv[1], "nop") ? t_nop : !strcmp(argv[1], "push") ? t_push : t_ret;
	long n = atol(argv[3]);
	int samples = atoi(argv[4]);
	char path[4096];
	ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
	path[len] = 0;
	FILE *tf = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int type;
	if (!tf || fscanf(tf, "%d", &type) != 1)
		return 3;
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = type;
	attr.config = !strcmp(argv[2], "uretprobe") ? 1 : 0; /* retprobe: config:0 */
	attr.config1 = (uint64_t)(uintptr_t)path;
	attr.config2 = file_offset((void *)fn);
	int fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) { perror("perf_event_open"); return 4; }
	double v[1024];
	for (int s = 0; s <= samples; s++) {
		double t0 = now();
		for (long i = 0; i < n; i++)
			fn();
		double t1 = now();
		if (s)
			v[s - 1] = n / (t1 - t0) / 1e6;
	}
	uint64_t hits;
	if (read(fd, &hits, sizeof hits) != sizeof hits || hits != (uint64_t)n * (samples + 1)) {
		fprintf(stderr, "hits %lu != calls\n", (unsigned long)hits);
		return 5;
	}
	qsort(v, samples, sizeof v[0], cmp);
	printf("%.4f\n", samples % 2 ? v[samples / 2] : (v[samples / 2 - 1] + v[samples / 2]) / 2);
	return 0;
}
