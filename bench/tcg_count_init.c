/* The guest's init for bench/tcg_count.sh: ROUNDS windows of CALLS raw getpid calls, each
 * window named by the address of its slot (see bench/tcg_count.c), then power off. */
#include <stdlib.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ROUNDS 5
#define CALLS 100000

static volatile unsigned char slot[ROUNDS];

int main(void)
{
	for (int r = 0; r < ROUNDS; r++) {
		__asm__ volatile("movb (%0), %%al\n\tnopl 0x5c05c001(%%rax)" ::"r"(&slot[r])
				 : "rax", "memory");
		for (int i = 0; i < CALLS; i++)
			syscall(SYS_getpid);
		__asm__ volatile("movb (%0), %%al\n\tnopl 0x5c05c002(%%rax)" ::"r"(&slot[r])
				 : "rax", "memory");
	}
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
