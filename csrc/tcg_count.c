/* A QEMU TCG plugin (plugin API version 1, as Debian's QEMU 7.2 loads it) that counts the
 * guest's instructions, user and kernel apart (by the address half of each translated block),
 * in windows a guest program marks: a load whose address names the window, followed by
 * `nopl 0x5c05c001(%rax)` (begin) or `nopl 0x5c05c002(%rax)` (end). Each end prints
 * "W KIND ADDRESS USER KERNEL" to QEMU's plugin log (-d plugin -D FILE).
 *
 * build.rs compiles it into a shared object that syscost carries and writes beside a
 * campaign's boots (`campaign --emulated-counters`); bench/tcg_count.sh builds it on its own
 * for a bare guest. QEMU ships no plugin header in
 * Debian, so the few API declarations used are written here from the API's documented ABI
 * (include/qemu/qemu-plugin.h of QEMU 7.2). Found here: a memory callback registered for
 * reads only (QEMU_PLUGIN_MEM_R) never fired on the marker's load; for reads and writes it
 * does. QEMU 7.2 offers no register reads, hence the address that names the window. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct {
	const char *target_name;
	struct { int min; int cur; } version;
	bool system_emulation;
	union { struct { int smp_vcpus; int max_vcpus; } system; };
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t,
					   void (*)(qemu_plugin_id_t, struct qemu_plugin_tb *));
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op,
					      void *, uint64_t);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *,
					    void (*)(unsigned int, void *),
					    enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *,
				      void (*)(unsigned int, qemu_plugin_meminfo_t, uint64_t, void *),
				      enum qemu_plugin_cb_flags, enum qemu_plugin_mem_rw, void *);
void qemu_plugin_outs(const char *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One vCPU: the inline adds need no per-vCPU slots. */
static uint64_t user, kernel, at_user, at_kernel, window;
/* nopl 0x5c05c0KK(%rax): 0f 1f 80 KK c0 05 5c, KK = 01 begin, 02 end. */
static const unsigned char NOP[7] = {0x0f, 0x1f, 0x80, 0x00, 0xc0, 0x05, 0x5c};

static void named(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *u)
{
	window = vaddr;
}

static void marked(unsigned int vcpu, void *kind)
{
	char line[128];
	if ((uintptr_t)kind == 1) {
		at_user = user;
		at_kernel = kernel;
		return;
	}
	snprintf(line, sizeof line, "W %llx %llu %llu\n", (unsigned long long)window,
		 (unsigned long long)(user - at_user), (unsigned long long)(kernel - at_kernel));
	qemu_plugin_outs(line);
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	bool in_kernel = qemu_plugin_tb_vaddr(tb) >= 0xffff800000000000ull;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 in_kernel ? &kernel : &user, n);
	for (size_t i = 0; i < n && !in_kernel; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		const unsigned char *d = qemu_plugin_insn_data(in);
		if (qemu_plugin_insn_size(in) != sizeof NOP || memcmp(d, NOP, 3) ||
		    memcmp(d + 4, NOP + 4, 3) || (d[3] != 1 && d[3] != 2))
			continue;
		/* The load that names the window ends the block before when the block splits
		 * between the two: its window is then the last one named (syscost checks the
		 * sequence of names). */
		if (i > 0)
			qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i - 1), named,
							 QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, NULL);
		qemu_plugin_register_vcpu_insn_exec_cb(in, marked, QEMU_PLUGIN_CB_NO_REGS,
						       (void *)(uintptr_t)d[3]);
	}
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info,
							       int argc, char **argv)
{
	if (info->version.min > 1 || info->version.cur < 1)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	return 0;
}
