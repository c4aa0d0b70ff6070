/* The smallest program `syscost run proc --op exec` can execve: no libc, no dynamic loader,
 * one exit_group(0) system call. Built static and freestanding by build.rs, embedded in
 * syscost, and executed from a memfd, so a fork+exec operation measures the kernel's exec
 * path and not a loader's work (lmbench's lat_proc exec runs a tiny static "hello"). */
#if defined(__x86_64__)
__attribute__((naked, noreturn)) void _start(void)
{
	__asm__ volatile("mov $231, %eax\n\t" /* exit_group */
			 "xor %edi, %edi\n\t"
			 "syscall\n\t");
}
#elif defined(__aarch64__)
__attribute__((naked, noreturn)) void _start(void)
{
	__asm__ volatile("mov x8, #94\n\t" /* exit_group */
			 "mov x0, #0\n\t"
			 "svc #0\n\t");
}
#else
#error "tiny_exit.c: add this architecture's exit_group system call"
#endif
