/* The x86-64 decoding syscost's QEMU plugin (tcg_count.c) does on each instruction it
 * translates: which are branches, which return from an interrupt, which are syscost's marks,
 * which are atomic read-modify-writes. Static functions in a header: the plugin includes it,
 * and x86_decode.c exports them for syscost's unit tests (src/counters/decode.rs). */
#ifndef SYSCOST_X86_DECODE_H
#define SYSCOST_X86_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Where the opcode of an instruction starts: after its legacy prefixes and a REX prefix. */
static inline size_t opcode_at(const unsigned char *d, size_t n)
{
	size_t i = 0;
	static const unsigned char PREFIX[] = {0x26, 0x2e, 0x36, 0x3e, 0x64,
					       0x65, 0x66, 0x67, 0xf2, 0xf3};
	while (i < n && memchr(PREFIX, d[i], sizeof PREFIX))
		i++;
	if (i < n && (d[i] & 0xf0) == 0x40)
		i++;
	return i;
}

/* An atomic read-modify-write: any instruction with a LOCK prefix (f0, among the legacy
 * prefixes; the processor refuses one on any instruction that is not a read-modify-write of
 * memory, so an executed one is), or XCHG with a memory operand (86, 87 with ModRM.mod other
 * than 3), which locks without the prefix. What a kernel's atomic_inc, test_and_set_bit,
 * cmpxchg, refcount and spinlock fast paths compile to on x86-64. */
static inline bool locked(const unsigned char *d, size_t n)
{
	static const unsigned char PREFIX[] = {0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65,
					       0x66, 0x67, 0xf0, 0xf2, 0xf3};
	size_t i = 0;
	bool lock = false;
	while (i < n && memchr(PREFIX, d[i], sizeof PREFIX))
		lock |= d[i++] == 0xf0;
	if (lock)
		return true;
	if (i < n && (d[i] & 0xf0) == 0x40)
		i++;
	return i + 1 < n && (d[i] == 0x86 || d[i] == 0x87) && (d[i + 1] >> 6) != 3;
}

/* IRETQ (REX.W cf): how a Linux interrupt or exception handler returns. */
static inline bool iretq(const unsigned char *d, size_t n)
{
	size_t i = opcode_at(d, n);
	return i < n && d[i] == 0xcf && i > 0 && (d[i - 1] & 0xf8) == 0x48;
}

/* A conditional branch: Jcc (70-7f, 0f 80-8f), LOOP/LOOPcc/JrCXZ (e0-e3), after prefixes. */
static inline bool conditional(const unsigned char *d, size_t n)
{
	size_t i = opcode_at(d, n);
	if (i >= n)
		return false;
	if ((d[i] & 0xf0) == 0x70 || (d[i] >= 0xe0 && d[i] <= 0xe3))
		return true;
	return d[i] == 0x0f && i + 1 < n && (d[i + 1] & 0xf0) == 0x80;
}

/* Any branch, as perf's `branches` counts them on Intel (BR_INST_RETIRED.ALL_BRANCHES): the
 * conditional ones, JMP and CALL (direct e8 e9 eb, far 9a ea, indirect ff /2 to /5), RET
 * (c2 c3 ca cb), IRET (cf), INT3/INT/INTO (cc cd ce), SYSCALL, SYSRET, SYSENTER and SYSEXIT
 * (0f 05, 0f 07, 0f 34, 0f 35). */
static inline bool branch(const unsigned char *d, size_t n)
{
	size_t i = opcode_at(d, n);
	if (i >= n)
		return false;
	if (conditional(d, n))
		return true;
	unsigned char op = d[i];
	if (op == 0xe8 || op == 0xe9 || op == 0xeb || op == 0x9a || op == 0xea)
		return true;
	if (op == 0xc2 || op == 0xc3 || op == 0xca || op == 0xcb || (op >= 0xcc && op <= 0xcf))
		return true;
	if (op == 0xff && i + 1 < n) {
		unsigned reg = (d[i + 1] >> 3) & 7;
		return reg >= 2 && reg <= 5;
	}
	return op == 0x0f && i + 1 < n &&
	       (d[i + 1] == 0x05 || d[i + 1] == 0x07 || d[i + 1] == 0x34 || d[i + 1] == 0x35);
}

/* nopl 0x5c05c0KK(%rax): 0f 1f 80 KK c0 05 5c, KK = 01 begin, 02 end, 03 a piece of a
 * declared word, 04 the declaration's end. */
static inline int mark_of(const unsigned char *d, size_t n)
{
	static const unsigned char NOP[7] = {0x0f, 0x1f, 0x80, 0x00, 0xc0, 0x05, 0x5c};
	if (n != sizeof NOP || memcmp(d, NOP, 3) || memcmp(d + 4, NOP + 4, 3) ||
	    d[3] < 1 || d[3] > 8)
		return 0;
	return d[3];
}

#endif
