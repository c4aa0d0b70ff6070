/* A QEMU TCG plugin (plugin API version 1, as Debian's QEMU 7.2 loads it) that counts what the
 * guest executes in windows a guest program marks: a load whose address names the window,
 * followed by `nopl 0x5c05c001(%rax)` (begin) or `nopl 0x5c05c002(%rax)` (end).
 *
 * Counted, user and kernel apart (by the address half of each instruction): instructions,
 * conditional branches and all branches (inline adds, always); with the argument `l1d=SETS:WAYS:LINE` (and
 * `l1i=...`), memory loads and stores and the misses of a set-associative LRU model of L1d and
 * L1i, per set too (callbacks that act only inside a window: the models see the windows'
 * accesses alone, each window starting from the state the last one left, and once the
 * interrupts are declared, none of theirs). The L1 models are
 * indexed by virtual address, as a VIPT L1 is: SETS * LINE must fit in a 4 KiB page. With
 * `l2=SETS:WAYS:LINE` too, an LRU L2 behind both takes their misses: a data line by its
 * physical address (qemu_plugin_hwaddr_phys_addr), an instruction line by its virtual one,
 * the same bits below 2 MiB in the kernel's text (mapped by 2 MiB pages): SETS * LINE must fit
 * in 2 MiB.
 *
 * With `l1i_also=SETS:WAYS:LINE` (up to 4, each with the L1i's line size), other L1i models are
 * fed the same fetches beside it (a fully associative one, SETS 1, of up to 4096 ways, or another
 * CPU's), each its misses alone: what the same code's fetches miss in another geometry, from
 * the same boot. An L1i, as the L2 does, indexes instruction lines by their virtual address:
 * SETS * LINE must fit in 2 MiB.
 *
 * With `atomics=1`, the atomic read-modify-writes executed in a window (a LOCK prefix, or XCHG
 * with memory: x86_decode.h's `locked`), user and kernel apart, each counted when it makes its
 * access (one an execution, the delivery's accesses QEMU hands the instruction before an
 * interrupt left out), and the kernel's by instruction and by the 64-byte line it touched: the
 * locks, reference counts and bitmaps a path takes, and where they are.
 *
 * With `vcpus=N` (N > 1, the guest's vCPUs), the counts are one vCPU's: the one whose mark
 * began the window (its owner). QEMU 7.2's inline adds land in one counter whichever vCPU
 * runs the code, so each block's instructions and each branch are counted by a callback that
 * acts only on the owner; every other callback acts only on it too. A window ended on another
 * vCPU than began it (its task moved) is refused (`R NAME moved`).
 *
 * With `lines=MIB` too (the guest's memory), a coherence model across the vCPUs: each 64-byte
 * line of guest-physical memory below MIB has the vCPUs holding a copy and the vCPU that last
 * wrote it, updated by every vCPU's every access inside the measurement's spans (marks 7 and
 * 8, see `spans`; a compare-and-swap: the vCPUs run on host threads at once). The owner's access in a window takes a line from another vCPU when it
 * reads a line another vCPU wrote since this one last held it, or writes a line another vCPU
 * holds: what hardware calls a HITM or an invalidation, counted user and kernel apart, and
 * the kernel's by instruction and by the line's virtual address. The caches are infinite
 * here (a line is held until another vCPU writes it): what moves is what sharing moves, not
 * what capacity evicts; how often depends on how the host interleaves the vCPUs' threads.
 *
 * With the argument `counts=PATH`, each `W` line is also sent to the Unix socket at PATH (a
 * QEMU chardev that is the guest's second serial port in a LAVA job): the guest then has its
 * own counts and can report them as the job's test cases. Sent without waiting (a full socket
 * drops the line: the guest then lacks that window, never the log).
 *
 * With the argument `asleep=1`, nothing but the marks is instrumented until the measurement's
 * first span opens (mark 7, `nopl 0x5c05c007(%rax)`: a worker's batches, a probe's runs) or a
 * wake mark (`nopl 0x5c05c005(%rax)`): a boot runs at the emulator's own speed up to the
 * measured loop (the kernel's boot, syscost starting, its rules loaded and its objects found,
 * the worker's exec and set-up), and the cache models see nothing before it. The interrupts'
 * declaration (marks 3 and 4) is read asleep and used from the wake. The wake flushes every
 * translation (qemu_plugin_reset), so all code runs counted from then on; a window begun while
 * still asleep is refused (`R NAME asleep`, and its end `R NAME unopened`), never counted in
 * part. A doze mark (`nopl 0x5c05c006(%rax)`) after the measurement stops the counting for
 * good (see `doze`).
 *
 * With the argument `blocks=1`, the kernel instructions of each translated block executed in
 * a window, by the block's first address (a callback per kernel block, acting only inside a
 * window), for syscost to name from the guest's kallsyms.
 *
 * Each end prints to QEMU's plugin log (-d plugin -D FILE):
 *   W NAME INSN_U INSN_K BR_U BR_K BRA_U BRA_K [LD_U LD_K ST_U ST_K LDM_U LDM_K STM_U STM_K
 *                                               IM_U IM_K [L2M_U L2M_K]]
 *   D NAME LOAD_MISSES_OF_SET_0 ... (L1d)   I NAME MISSES_OF_SET_0 ... (L1i)   (with the
 *                                                                             models)
 *   L NAME LINE:LOAD_MISSES ...   (with the models; hexadecimal: the L1d lines whose loads
 *                                  missed most, by virtual address, most first, at most 32)
 *   B NAME ADDR:INSNS ...   (with blocks=1; hexadecimal, a block's address may repeat when it
 *                            was translated again)
 *   J NAME SETS:WAYS:LINE IM_U IM_K ...   (with l1i_also=: each other L1i's misses, in the
 *                                         order given)
 *   A NAME ATOM_U ATOM_K DROPPED INSN:LINE:N ...   (with atomics=1; hexadecimal pairs: each
 *                                   kernel atomic's address, the line it touched, how often;
 *                                   DROPPED: those past the table's 512 distinct pairs)
 *   M NAME TAKEN_U TAKEN_K DROPPED INSN:LINE:N ...   (with lines=: the lines taken from
 *                                   other vCPUs, and the kernel's by instruction and line)
 *   R NAME asleep | unspanned | unopened | moved   (a window refused: begun before the
 *                                      wake, or outside every span with lines=, ended
 *                                      unbegun, or ended on another vCPU)
 *
 * build.rs compiles it into a shared object that syscost carries and writes beside a
 * campaign's boots (`campaign --emulated-counters`); bench/tcg_count.sh builds it on its own
 * for a bare guest. QEMU ships no plugin header in Debian, so the few API declarations used
 * are written here from the API's documented ABI (include/qemu/qemu-plugin.h of QEMU 7.2).
 * Found here: a memory callback registered for reads only (QEMU_PLUGIN_MEM_R) never fired on
 * the marker's load, and inline counts filtered by R or W counted all accesses; callbacks for
 * reads and writes fire, and qemu_plugin_mem_is_store tells them apart. QEMU 7.2 offers no
 * register reads, hence the address that names the window. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "x86_decode.h"

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
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *, enum qemu_plugin_op,
					      void *, uint64_t);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *, enum qemu_plugin_op,
						void *, uint64_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *,
					  void (*)(unsigned int, void *),
					  enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *,
					    void (*)(unsigned int, void *),
					    enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *,
				      void (*)(unsigned int, qemu_plugin_meminfo_t, uint64_t, void *),
				      enum qemu_plugin_cb_flags, enum qemu_plugin_mem_rw, void *);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t);
struct qemu_plugin_hwaddr;
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t, uint64_t);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *);
void qemu_plugin_outs(const char *);
typedef void (*qemu_plugin_simple_cb_t)(qemu_plugin_id_t);
void qemu_plugin_reset(qemu_plugin_id_t, qemu_plugin_simple_cb_t);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* What is counted, per privilege (0 user, 1 kernel): the owner vCPU's alone. */
enum { INSN, BR, BRA, LD, ST, LDM, STM, IM, L2M, KINDS };
static uint64_t count[KINDS][2], at[KINDS][2];
static uint64_t window;
static bool in_window;
/* `vcpus=N`: the guest's vCPUs (1: the inline adds count, every callback acts), and the vCPU
 * whose mark began the last window, written by it and read by all. */
static unsigned n_vcpus = 1;
static volatile int owner = -1;

/* Whether vCPU `vcpu`'s callback acts: the owner's alone (before any window, none). */
static inline bool mine(unsigned int vcpu)
{
	return n_vcpus == 1 || (int)vcpu == owner;
}
/* `asleep=1` until the first wake: only the marks are instrumented. */
static bool asleep;
/* After the doze mark (6): asleep for good, every later mark refused or ignored. */
static bool dozed;

/* Interrupts, left out of the counts once the guest has declared its kernel's interrupt and
 * exception entry points (marks 3 and 4, below): QEMU 7.2's plugin API tells a plugin nothing
 * of interrupts, but an interrupt's first block starts at an IDT entry, and the handler ends
 * with IRETQ. A block starting at an interrupt's entry opens interrupt context (depth 1); an
 * exception's entry nests inside it (its IRETQ must not close the interrupt) but, met at
 * depth 0, is the measured task's own (a page fault, a uprobe's int3) and counted as its
 * work; each IRETQ at depth > 0 closes one level. What the inline adds counted from the
 * entry's block to the closing IRETQ (instructions, branches) moves from the counts to
 * `irq`; the callbacks (loads, stores, the models, blocks) skip it: the modelled caches do
 * not see its accesses either. The last IRETQ's own stack loads come after its callback:
 * `iret_loads` leaves them out until the next block starts; the delivery's accesses before
 * the entry's block are left out by `delivered`. */
enum { ENTRY_EXC = 1, ENTRY_IRQ = 2 };
struct entry {
	uint64_t lo, hi;
	int kind;
};
static struct entry *entries;
static size_t n_entries;
static qemu_plugin_id_t self;
static int depth;
static bool iret_loads;
static uint64_t snap[LD][2], irq[LD][2], irq_at[LD][2], irqs, irqs_at;
/* What the guest declares: 64-bit words sent 16 bits at a time (mark 3: the low 16 bits of
 * the named address), read as (kind, lo, hi) triples at mark 4. */
static uint64_t *said;
static size_t n_said, cap_said;
static uint64_t word;
static unsigned pieces;

/* A fully associative cache of many ways: its ways in a list, most recent first, found by an
 * open-addressed table of their lines, so an access costs the same at 512 ways as at 8 (a
 * scan and a move of 512 tags per fetch would slow the emulator several times). */
struct fa {
	unsigned ways, used, head, tail; /* `ways` as an index: none */
	uint64_t *line;                  /* per way: its line + 1 */
	unsigned *prev, *next;
	unsigned *slot; /* the table: a way + 1 per slot (0: empty), 4 * ways slots */
	unsigned mask;
};

/* A set-associative cache with LRU replacement: each set's tags, most recent first (or, one
 * set of many ways, a `struct fa`). */
struct cache {
	unsigned sets, ways, line_shift;
	uint64_t *tags; /* sets * ways, tag + 1 (0: empty) */
	uint64_t *misses; /* per set, in the current window */
	struct fa *fa;
};
static struct cache l1d, l1i, l2;
static bool modelled, with_l2;

/* Other L1i models (`l1i_also=`), fed the L1i's fetches: their misses, [user, kernel]. */
#define ALSO_MAX 4
static struct cache also[ALSO_MAX];
static unsigned n_also;
static uint64_t also_misses[ALSO_MAX][2], also_at[ALSO_MAX][2];

/* Where the `W` lines go too (`counts=PATH`), connected at the first window's end. */
static const char *counts_path;
static int counts_fd = -1;
static bool counts_failed;

static void send_counts(const char *line)
{
	if (!counts_path || counts_failed)
		return;
	if (counts_fd < 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		strncpy(a.sun_path, counts_path, sizeof a.sun_path - 1);
		counts_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (counts_fd < 0 || connect(counts_fd, (struct sockaddr *)&a, sizeof a)) {
			fprintf(stderr, "tcg_count: cannot connect to %s: the guest gets no counts\n",
				counts_path);
			counts_failed = true;
			return;
		}
	}
	(void)!send(counts_fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* The L1d lines whose loads missed in the current window, by line number, in an open-addressed
 * table: which objects a window's misses were in, for syscost to name from the addresses the
 * guest recorded. A window touching more distinct missing lines than the table holds has the
 * rest left out of it (its sets still count them). */
#define MISSED_SLOTS 8192
#define MISSED_SHOWN 32
struct missed {
	uint64_t line, n; /* line + 1 (0: empty) */
};
static struct missed missed[MISSED_SLOTS];
static unsigned n_missed;

static void note_miss(uint64_t line)
{
	unsigned i = (unsigned)((line * 0x9e3779b97f4a7c15ull) >> 51) % MISSED_SLOTS;
	while (missed[i].line && missed[i].line != line + 1)
		i = (i + 1) % MISSED_SLOTS;
	if (!missed[i].line) {
		if (n_missed >= MISSED_SLOTS / 2)
			return;
		missed[i].line = line + 1;
		n_missed++;
	}
	missed[i].n++;
}

static int most_first(const void *a, const void *b)
{
	const struct missed *x = a, *y = b;
	return x->n < y->n ? 1 : x->n > y->n ? -1 : x->line < y->line ? -1 : x->line > y->line;
}

static void print_missed(void)
{
	struct missed *all = malloc((n_missed + 1) * sizeof *all);
	unsigned n = 0;
	for (unsigned i = 0; i < MISSED_SLOTS; i++)
		if (missed[i].line)
			all[n++] = missed[i];
	qsort(all, n, sizeof *all, most_first);
	char *line = malloc(32 + 40 * MISSED_SHOWN), *p = line;
	p += sprintf(p, "L %llx", (unsigned long long)window);
	for (unsigned i = 0; i < n && i < MISSED_SHOWN; i++)
		p += sprintf(p, " %llx:%llx", (unsigned long long)((all[i].line - 1) << l1d.line_shift),
			     (unsigned long long)all[i].n);
	strcpy(p, "\n");
	qemu_plugin_outs(line);
	free(line);
	free(all);
	memset(missed, 0, sizeof missed);
	n_missed = 0;
}

/* A kernel block's instructions in the current window (`blocks=1`). The blocks executed in a
 * window are listed as they are first met, and printed and cleared at its end. */
struct block {
	uint64_t vaddr, n, in_window;
};
static bool by_block;
static struct block **met;
static size_t n_met, cap_met;

static void block_ran(unsigned int vcpu, void *u)
{
	struct block *b = u;
	if (!mine(vcpu) || !in_window || depth)
		return;
	if (!b->in_window) {
		if (n_met == cap_met) {
			cap_met = cap_met ? 2 * cap_met : 1024;
			met = realloc(met, cap_met * sizeof *met);
		}
		met[n_met++] = b;
	}
	b->in_window += b->n;
}

static void print_blocks(void)
{
	char *line = malloc(32 + 40 * n_met), *p = line;
	p += sprintf(p, "B %llx", (unsigned long long)window);
	for (size_t i = 0; i < n_met; i++) {
		p += sprintf(p, " %llx:%llx", (unsigned long long)met[i]->vaddr,
			     (unsigned long long)met[i]->in_window);
		met[i]->in_window = 0;
	}
	n_met = 0;
	strcpy(p, "\n");
	qemu_plugin_outs(line);
	free(line);
}

/* `atomics=1`: the atomic read-modify-writes in the current window, [user, kernel], and the
 * kernel's by (instruction, line touched) in an open-addressed table. An atomic is counted at
 * its first access after its instruction starts (`atomic_ran`): an execution that faults before
 * its access does not count, and the accesses of an interrupt's delivery, which QEMU hands to
 * the instruction before it, do not count again. */
#define SITE_SLOTS 1024
struct site {
	uint64_t insn, line, n; /* insn 0: empty */
};
/* What a window counts by site: how many in all, [user, kernel] (`at`: at the window's
 * begin), and the kernel's by (instruction, line) in an open-addressed table of `n` sites,
 * all but `dropped`. */
struct tally {
	uint64_t total[2], at[2], dropped;
	unsigned n;
	struct site site[SITE_SLOTS];
};
struct locked_insn {
	uint64_t vaddr;
	int kernel;
};
static bool with_atomics;
static struct tally atoms;
static const struct locked_insn *pending;

/* `lines=MIB`: the lines the owner took from other vCPUs, as the atomics. */
static bool coherent;
static struct tally moves;

static void atomic_ran(unsigned int vcpu, void *u)
{
	if (mine(vcpu))
		pending = u;
}

/* One more in `t`: the kernel's by (insn, line), or one more dropped. */
static void tally_note(struct tally *t, int kernel, uint64_t insn, uint64_t line)
{
	t->total[kernel]++;
	if (!kernel)
		return;
	unsigned i = (unsigned)(((insn ^ line * 31) * 0x9e3779b97f4a7c15ull) >> 54) % SITE_SLOTS;
	while (t->site[i].insn && (t->site[i].insn != insn || t->site[i].line != line))
		i = (i + 1) % SITE_SLOTS;
	if (!t->site[i].insn) {
		if (t->n >= SITE_SLOTS / 2) {
			t->dropped++;
			return;
		}
		t->site[i] = (struct site){ insn, line, 0 };
		t->n++;
	}
	t->site[i].n++;
}

/* A window begins: its sites afresh. */
static void tally_clear(struct tally *t)
{
	memset(t->site, 0, sizeof t->site);
	t->n = 0;
	t->dropped = 0;
}

static void tally_begin(struct tally *t)
{
	memcpy(t->at, t->total, sizeof t->at);
	tally_clear(t);
}

/* Marks 7 and 8: the measurement's spans (a worker's batches, a probe's runs), open while
 * their count is above 0. The coherence model follows the vCPUs' accesses inside them alone:
 * what the guest does between (syscost starting, a worker's exec and set-up, the symbols read
 * for the profile) is not the measured loop's sharing, and following it cost more than the
 * measurement (a 2-vCPU uprobe loop: 4.4 s against 1.6 s). The windows lie inside a span,
 * each after its span's warm-up batch: the lines are held as the span's own accesses left
 * them, the other vCPUs' included, between windows too. A window begun outside every span is
 * refused (`R NAME unspanned`). */
static int spans;

/* The coherence model's lines, one word each: the vCPUs holding a copy (a bit each, from bit
 * 8) and the vCPU that last wrote it + 1 (the low 8 bits; 0: none since the wake). */
static uint64_t *directory;
static uint64_t n_lines;

/* vCPU `vcpu`'s access to the line at `vaddr`, in the directory: whether it took the line
 * from another vCPU (read a line another vCPU wrote since this one last held it, or wrote a
 * line another vCPU holds). */
static bool shared_line(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, bool store)
{
	struct qemu_plugin_hwaddr *h = qemu_plugin_get_hwaddr(info, vaddr);
	uint64_t line = h ? qemu_plugin_hwaddr_phys_addr(h) >> 6 : n_lines;
	if (line >= n_lines)
		return false; /* a device's, or above the memory */
	uint64_t me = 1ull << (vcpu + 8), old = __atomic_load_n(&directory[line], __ATOMIC_RELAXED);
	for (;;) {
		uint64_t writer = old & 0xff, holders = old & ~0xffull, new;
		bool other_wrote = !(holders & me) && writer && writer != vcpu + 1;
		bool taken = store ? other_wrote || (holders & ~me) : other_wrote;
		new = store ? me | (vcpu + 1) : old | me;
		if (new == old ||
		    __atomic_compare_exchange_n(&directory[line], &old, new, true, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return taken;
	}
}

static void atomic_accessed(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
			    void *u)
{
	const struct locked_insn *l = u;
	if (!mine(vcpu) || pending != l)
		return;
	pending = NULL;
	if (!in_window || depth)
		return;
	tally_note(&atoms, l->kernel, l->vaddr, vaddr & ~63ull);
}

/* `KIND NAME U K DROPPED INSN:LINE:N ...` (`A` the atomics, `M` the lines taken), and the
 * table cleared. */
static void tally_print(char kind, struct tally *t)
{
	char *line = malloc(96 + 56 * (size_t)t->n), *p = line;
	p += sprintf(p, "%c %llx %llu %llu %llu", kind, (unsigned long long)window,
		     (unsigned long long)(t->total[0] - t->at[0]),
		     (unsigned long long)(t->total[1] - t->at[1]), (unsigned long long)t->dropped);
	for (unsigned i = 0; i < SITE_SLOTS; i++)
		if (t->site[i].insn)
			p += sprintf(p, " %llx:%llx:%llx", (unsigned long long)t->site[i].insn,
				     (unsigned long long)t->site[i].line,
				     (unsigned long long)t->site[i].n);
	strcpy(p, "\n");
	qemu_plugin_outs(line);
	free(line);
	tally_clear(t);
}

static unsigned fa_home(const struct fa *f, uint64_t line)
{
	return (unsigned)((line * 0x9e3779b97f4a7c15ull) >> 40) & f->mask;
}

/* The slot holding `line`, or the empty slot where it would go. */
static unsigned fa_find(const struct fa *f, uint64_t line)
{
	unsigned i = fa_home(f, line);
	while (f->slot[i] && f->line[f->slot[i] - 1] != line + 1)
		i = (i + 1) & f->mask;
	return i;
}

/* Empty slot `i`, moving back the entries after it that probed past it (linear probing's
 * deletion without tombstones). */
static void fa_unslot(struct fa *f, unsigned i)
{
	f->slot[i] = 0;
	for (unsigned j = (i + 1) & f->mask; f->slot[j]; j = (j + 1) & f->mask) {
		unsigned k = fa_home(f, f->line[f->slot[j] - 1] - 1);
		bool moves = i <= j ? (k <= i || k > j) : (k <= i && k > j);
		if (moves) {
			f->slot[i] = f->slot[j];
			f->slot[j] = 0;
			i = j;
		}
	}
}

static void fa_unlink(struct fa *f, unsigned w)
{
	unsigned p = f->prev[w], n = f->next[w];
	if (p < f->ways)
		f->next[p] = n;
	else
		f->head = n;
	if (n < f->ways)
		f->prev[n] = p;
	else
		f->tail = p;
}

static void fa_push(struct fa *f, unsigned w)
{
	f->prev[w] = f->ways;
	f->next[w] = f->head;
	if (f->head < f->ways)
		f->prev[f->head] = w;
	else
		f->tail = w;
	f->head = w;
}

/* Whether `line` was in the fully associative cache; it is the most recent either way. */
static bool fa_hit(struct fa *f, uint64_t line)
{
	unsigned i = fa_find(f, line);
	if (f->slot[i]) {
		unsigned w = f->slot[i] - 1;
		if (f->head != w) {
			fa_unlink(f, w);
			fa_push(f, w);
		}
		return true;
	}
	unsigned w;
	if (f->used < f->ways) {
		w = f->used++;
	} else {
		w = f->tail;
		fa_unslot(f, fa_find(f, f->line[w] - 1));
		fa_unlink(f, w);
		i = fa_find(f, line);
	}
	f->line[w] = line + 1;
	f->slot[i] = w + 1;
	fa_push(f, w);
	return false;
}

static struct fa *fa_new(unsigned ways)
{
	struct fa *f = calloc(1, sizeof *f);
	unsigned slots = 4;
	while (slots < 4 * ways)
		slots *= 2;
	f->ways = ways;
	f->head = f->tail = ways;
	f->line = calloc(ways, sizeof *f->line);
	f->prev = calloc(ways, sizeof *f->prev);
	f->next = calloc(ways, sizeof *f->next);
	f->slot = calloc(slots, sizeof *f->slot);
	f->mask = slots - 1;
	return f;
}

/* Whether the line holding `addr` was in the cache; it is the set's most recent either way.
 * A miss is counted in its set when `tally` (L1d: loads only, so that a window's sets add up
 * to its load misses, the figure perf's L1-dcache-load-misses names). */
static bool hit(struct cache *c, uint64_t addr, bool tally)
{
	uint64_t line = addr >> c->line_shift;
	if (c->fa) {
		bool found = fa_hit(c->fa, line);
		c->misses[0] += !found && tally;
		return found;
	}
	unsigned set = line % c->sets;
	uint64_t tag = line / c->sets + 1, *t = c->tags + (size_t)set * c->ways;
	unsigned w = 0;
	while (w < c->ways && t[w] != tag)
		w++;
	bool found = w < c->ways;
	if (!found) {
		w = c->ways - 1;
		c->misses[set] += tally;
		if (tally && c == &l1d)
			note_miss(line);
	}
	memmove(t + 1, t, w * sizeof *t);
	t[0] = tag;
	return found;
}

/* The last instruction of a block while it runs: how many accesses it makes itself, learned
 * from the runs of it that no interrupt or exception followed (-1 until one has), and how many
 * it has made this time. QEMU 7.2 hands the accesses of an interrupt's or exception's delivery
 * (the IDT and GDT reads, the stack pushes), which no instruction makes, to the memory
 * callbacks of the instruction before it: beyond what that instruction makes itself, they are
 * left out of the counts and the models (they were 6.7 loads an interrupt of a window's
 * count, and with them its loads followed the host's speed). */
struct last {
	int learned;
};
static struct last *last_insn;
static int since_last;

static void last_started(unsigned int vcpu, void *u)
{
	if (!mine(vcpu))
		return;
	last_insn = u;
	since_last = 0;
}

/* A block starts: what its predecessor's last instruction made is learned, unless the block
 * is an entry, which the delivery's accesses came before. */
static void block_started(bool entry)
{
	if (last_insn && !entry)
		last_insn->learned = since_last;
	last_insn = NULL;
}

/* Whether this access is a delivery's, not an instruction's. */
static bool delivered(void)
{
	if (!last_insn)
		return false;
	since_last++;
	return last_insn->learned >= 0 && since_last > last_insn->learned;
}

/* An instruction that accesses memory, for the models and the coherence model. */
struct accessor {
	uint64_t vaddr;
	int kernel;
};

static void accessed(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *u)
{
	const struct accessor *a = u;
	int kernel = a->kernel, store = qemu_plugin_mem_is_store(info);
	bool taken = coherent && !asleep && __atomic_load_n(&spans, __ATOMIC_RELAXED) > 0 &&
		     shared_line(vcpu, info, vaddr, store);
	if (!mine(vcpu))
		return;
	/* An interrupt's accesses are left out of the models as out of the counts: how many
	 * land in a window follows the host's speed (the guest's timer runs on the host's clock),
	 * and a window's misses are then the measured task's alone, the same in every boot for
	 * the same placement of its objects. */
	if (delivered() || !in_window || depth || iret_loads)
		return;
	if (taken)
		tally_note(&moves, kernel, a->vaddr, vaddr & ~63ull);
	if (!modelled)
		return;
	count[store ? ST : LD][kernel]++;
	if (hit(&l1d, vaddr, !store))
		return;
	count[store ? STM : LDM][kernel]++;
	if (with_l2) {
		struct qemu_plugin_hwaddr *h = qemu_plugin_get_hwaddr(info, vaddr);
		if (!hit(&l2, h ? qemu_plugin_hwaddr_phys_addr(h) : vaddr, false))
			count[L2M][kernel]++;
	}
}

/* The cache lines a block's instructions span, in order, for the L1i model. */
struct lines {
	int kernel;
	unsigned n;
	uint64_t line[];
};

static void fetched(unsigned int vcpu, void *u)
{
	struct lines *l = u;
	if (!mine(vcpu))
		return;
	block_started(false);
	iret_loads = false;
	if (!in_window || depth)
		return;
	for (unsigned i = 0; i < l->n; i++) {
		uint64_t addr = l->line[i] << l1i.line_shift;
		for (unsigned k = 0; k < n_also; k++)
			also_misses[k][l->kernel] += !hit(&also[k], addr, false);
		if (hit(&l1i, addr, true))
			continue;
		count[IM][l->kernel]++;
		if (with_l2 && !hit(&l2, addr, false))
			count[L2M][l->kernel]++;
	}
}

/* `J NAME SETS:WAYS:LINE IM_U IM_K ...`: each other L1i's misses in the window. */
static void print_also(void)
{
	char line[64 + ALSO_MAX * 80], *p = line;
	p += sprintf(p, "J %llx", (unsigned long long)window);
	for (unsigned k = 0; k < n_also; k++)
		p += sprintf(p, " %u:%u:%u %llu %llu", also[k].sets, also[k].ways,
			     1u << also[k].line_shift,
			     (unsigned long long)(also_misses[k][0] - also_at[k][0]),
			     (unsigned long long)(also_misses[k][1] - also_at[k][1]));
	strcpy(p, "\n");
	qemu_plugin_outs(line);
}

static void named(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *u)
{
	window = vaddr;
}

static void print_sets(char kind, const struct cache *c)
{
	char *line = malloc(32 + 21 * (size_t)c->sets), *p = line;
	p += sprintf(p, "%c %llx", kind, (unsigned long long)window);
	for (unsigned s = 0; s < c->sets; s++)
		p += sprintf(p, " %llu", (unsigned long long)c->misses[s]);
	strcpy(p, "\n");
	qemu_plugin_outs(line);
	free(line);
}

static void entered(unsigned int vcpu, void *u);
static void returned(unsigned int vcpu, void *u);
static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
static void piece(void);
static void declared(void);
static void wake(void);
static void doze(void);
static void instrument_mark(struct qemu_plugin_tb *tb, size_t i, const unsigned char *d,
			    size_t size);
static void translated_asleep(struct qemu_plugin_tb *tb, size_t n, bool kernel);

/* `Q NAME IRQS INSN_U INSN_K BR_U BR_K BRA_U BRA_K OPEN`: the interrupts left out of the
 * window, what they counted, and the depth the window ended at (0 unless an interrupt's
 * return was never seen). Only once the guest declared its entries. */
static void print_interrupts(void)
{
	char line[256];
	int n = snprintf(line, sizeof line, "Q %llx %llu", (unsigned long long)window,
			 (unsigned long long)(irqs - irqs_at));
	for (int k = 0; k < LD; k++)
		for (int priv = 0; priv < 2; priv++)
			n += snprintf(line + n, sizeof line - n, " %llu",
				      (unsigned long long)(irq[k][priv] - irq_at[k][priv]));
	snprintf(line + n, sizeof line - n, " %d\n", depth);
	qemu_plugin_outs(line);
	send_counts(line);
}

/* Mark 7 (`open`) or 8: a span opens or closes; the marks of the guest's one syscost pair up,
 * so a close with none open (a worker killed between the two) is ignored. */
static void spanned(bool open)
{
	int n = __atomic_load_n(&spans, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&spans, &n, open ? n + 1 : n > 0 ? n - 1 : 0, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void marked(unsigned int vcpu, void *kind)
{
	char line[512];
	int n = 0, kinds = !modelled ? LD : with_l2 ? KINDS : L2M;
	if (asleep && ((uintptr_t)kind == 1 || (uintptr_t)kind == 2)) {
		snprintf(line, sizeof line, "R %llx asleep\n", (unsigned long long)window);
		qemu_plugin_outs(line);
		return dozed ? (void)0 : wake();
	}
	if (dozed)
		return;
	if ((uintptr_t)kind == 3)
		return piece();
	if ((uintptr_t)kind == 4)
		return declared();
	if ((uintptr_t)kind == 5)
		return asleep ? wake() : (void)0;
	if ((uintptr_t)kind == 6)
		return asleep ? (void)0 : doze();
	if ((uintptr_t)kind == 7 && asleep)
		wake();
	if ((uintptr_t)kind == 7 || (uintptr_t)kind == 8)
		return spanned((uintptr_t)kind == 7);
	if ((uintptr_t)kind == 1 && coherent && !__atomic_load_n(&spans, __ATOMIC_RELAXED)) {
		snprintf(line, sizeof line, "R %llx unspanned\n", (unsigned long long)window);
		qemu_plugin_outs(line);
		return;
	}
	if ((uintptr_t)kind == 1) {
		/* The window opens in the measured task, in user space: no interrupt is open. */
		owner = (int)vcpu;
		depth = 0;
		iret_loads = false;
		memcpy(irq_at, irq, sizeof irq_at);
		irqs_at = irqs;
		memcpy(at, count, sizeof at);
		memcpy(also_at, also_misses, sizeof also_at);
		tally_begin(&atoms);
		tally_begin(&moves);
		for (size_t i = 0; i < n_met; i++) /* a window whose end was never met */
			met[i]->in_window = 0;
		n_met = 0;
		if (modelled) {
			memset(l1d.misses, 0, l1d.sets * sizeof *l1d.misses);
			memset(l1i.misses, 0, l1i.sets * sizeof *l1i.misses);
			memset(missed, 0, sizeof missed);
			n_missed = 0;
		}
		in_window = true;
		return;
	}
	if (!in_window) {
		/* The end of a window never begun (begun asleep): refused, not counted from a
		 * begin of another. */
		snprintf(line, sizeof line, "R %llx unopened\n", (unsigned long long)window);
		qemu_plugin_outs(line);
		return;
	}
	in_window = false;
	if (!mine(vcpu)) {
		/* Its task moved to another vCPU: what ran where is not one vCPU's count. */
		snprintf(line, sizeof line, "R %llx moved\n", (unsigned long long)window);
		qemu_plugin_outs(line);
		return;
	}
	n += snprintf(line, sizeof line, "W %llx", (unsigned long long)window);
	for (int k = 0; k < kinds; k++)
		for (int priv = 0; priv < 2; priv++)
			n += snprintf(line + n, sizeof line - n, " %llu",
				      (unsigned long long)(count[k][priv] - at[k][priv]));
	snprintf(line + n, sizeof line - n, "\n");
	qemu_plugin_outs(line);
	send_counts(line);
	if (n_entries)
		print_interrupts();
	if (modelled) {
		print_sets('D', &l1d);
		print_sets('I', &l1i);
		print_missed();
		if (n_also)
			print_also();
	}
	if (by_block)
		print_blocks();
	if (with_atomics)
		tally_print('A', &atoms);
	if (coherent)
		tally_print('M', &moves);
}

/* Mark 3: 16 more bits of the word being declared. */
static void piece(void)
{
	word = word << 16 | (window & 0xffff);
	if (++pieces < 4)
		return;
	if (n_said == cap_said) {
		cap_said = cap_said ? 2 * cap_said : 256;
		said = realloc(said, cap_said * sizeof *said);
	}
	said[n_said++] = word;
	word = 0;
	pieces = 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Translations made before the entries were known have no entry callbacks: start again. */
static void reinstalled(qemu_plugin_id_t id)
{
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
}

/* Mark 4: the words said so far are the entries, (kind, lo, hi) each, then a check word
 * (FNV-1a over them: a piece read wrong drops the declaration); a second declaration replaces
 * the first. */
static void declared(void)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i + 1 < n_said; i++)
		h = (h ^ said[i]) * 0x100000001b3ull;
	size_t n = n_said;
	bool whole = n && h == said[n - 1] && !pieces && (n - 1) % 3 == 0;
	n_said = word = pieces = 0; /* the next declaration starts afresh either way */
	if (!whole) {
		qemu_plugin_outs("E bad\n");
		return;
	}
	n--;
	free(entries);
	n_entries = 0;
	entries = malloc((n / 3 + 1) * sizeof *entries);
	for (size_t i = 0; i + 2 < n; i += 3)
		if ((said[i] == ENTRY_EXC || said[i] == ENTRY_IRQ) && said[i + 1] < said[i + 2])
			entries[n_entries++] = (struct entry){ said[i + 1], said[i + 2], (int)said[i] };
	qsort(entries, n_entries, sizeof *entries, by_lo);
	char line[64];
	snprintf(line, sizeof line, "E %zu\n", n_entries);
	qemu_plugin_outs(line);
	/* The translations made before have no entry callbacks: asleep, the wake flushes them. */
	if (!asleep)
		wake();
}

/* Mark 5, the first span's mark (7), or a declaration made awake: instrument everything from
 * now on. */
static void wake(void)
{
	asleep = false;
	qemu_plugin_reset(self, reinstalled);
}

/* Mark 6: the measurement is over. Code translated from now on has the marks alone, as
 * asleep, and the models stop: what the guest does after (reading its symbols, sending the
 * result) runs near the emulator's own speed (a 2-vCPU guest's boot under the coherence
 * model: 10 s here against 20 s). Translations are not flushed, as a wake flushes them: QEMU
 * 7.2 leaves a vCPU's pointer to an instruction's memory callbacks set when the instruction
 * faults, and calls them from the next access of any instruction; a flush frees them under
 * it (an abort in qemu_plugin_vcpu_mem_cb, 1 boot in 3 here). A window still open is never
 * ended, and the doze is for good: a window begun after it is refused asleep. */
static void doze(void)
{
	in_window = false;
	asleep = dozed = true;
}

/* The kind of entry a kernel block starting at `a` is, or 0. */
static int entry_at(uint64_t a)
{
	size_t lo = 0, hi = n_entries;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (entries[mid].hi <= a)
			lo = mid + 1;
		else if (entries[mid].lo > a)
			hi = mid;
		else
			return entries[mid].kind;
	}
	return 0;
}

/* An entry's block starts: its `n` instructions are counted here (it has no inline add), and
 * an interrupt, or an exception inside one, opens a level. */
static void entered(unsigned int vcpu, void *u)
{
	uintptr_t kind = (uintptr_t)u & 3, n = (uintptr_t)u >> 2;
	if (!mine(vcpu))
		return;
	block_started(true);
	if ((depth > 0 || kind == ENTRY_IRQ) && depth++ == 0)
		memcpy(snap, count, sizeof snap);
	count[INSN][1] += n;
}

/* An IRETQ (its branch is counted here, not inline): the last level's closes the interrupt,
 * whose counts move to `irq`. */
static void returned(unsigned int vcpu, void *u)
{
	if (!mine(vcpu))
		return;
	count[BRA][1]++;
	if (depth == 0 || --depth)
		return;
	for (int k = 0; k < LD; k++)
		for (int priv = 0; priv < 2; priv++) {
			irq[k][priv] += count[k][priv] - snap[k][priv];
			count[k][priv] = snap[k][priv];
		}
	irqs++;
	iret_loads = modelled || coherent;
}

static struct lines *lines_of(struct qemu_plugin_tb *tb, size_t n, int kernel)
{
	struct lines *l = malloc(sizeof *l + 2 * n * sizeof l->line[0]);
	l->kernel = kernel;
	l->n = 0;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		uint64_t a = qemu_plugin_insn_vaddr(in), size = qemu_plugin_insn_size(in);
		for (uint64_t x = a >> l1i.line_shift; x <= (a + size - 1) >> l1i.line_shift; x++)
			if (l->n == 0 || l->line[l->n - 1] != x)
				l->line[l->n++] = x;
	}
	return l;
}

/* `vcpus=N`: a block's instructions, or one branch, counted for the owner alone. */
static void block_counted(unsigned int vcpu, void *u)
{
	uintptr_t kernel = (uintptr_t)u & 1, n = (uintptr_t)u >> 1;
	if (mine(vcpu))
		count[INSN][kernel] += n;
}

static void branch_counted(unsigned int vcpu, void *u)
{
	uintptr_t kernel = (uintptr_t)u & 1, kind = (uintptr_t)u >> 1;
	if (mine(vcpu))
		count[kind][kernel]++;
}

/* One more of `kind` each time `in` runs: an inline add on one vCPU, else a callback. */
static void count_insn(struct qemu_plugin_insn *in, int kind, int kernel)
{
	if (n_vcpus == 1)
		qemu_plugin_register_vcpu_insn_exec_inline(in, QEMU_PLUGIN_INLINE_ADD_U64,
							   &count[kind][kernel], 1);
	else
		qemu_plugin_register_vcpu_insn_exec_cb(in, branch_counted, QEMU_PLUGIN_CB_NO_REGS,
						       (void *)(uintptr_t)(kind << 1 | kernel));
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (n == 0)
		return;
	uint64_t first = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
	int kernel = first >= 0xffff800000000000ull;
	if (asleep)
		return translated_asleep(tb, n, kernel);
	int entry = kernel ? entry_at(first) : 0;
	/* Registered first: the callbacks below see the level it opens. */
	if (entry)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, entered, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)(n << 2 | entry));
	else if (n_vcpus == 1)
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
							 &count[INSN][kernel], n);
	else
		qemu_plugin_register_vcpu_tb_exec_cb(tb, block_counted, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)(n << 1 | kernel));
	if (modelled)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, fetched, QEMU_PLUGIN_CB_NO_REGS,
						     lines_of(tb, n, kernel));
	if (by_block && kernel) {
		struct block *b = calloc(1, sizeof *b);
		b->vaddr = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
		b->n = n;
		qemu_plugin_register_vcpu_tb_exec_cb(tb, block_ran, QEMU_PLUGIN_CB_NO_REGS, b);
	}
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		const unsigned char *d = qemu_plugin_insn_data(in);
		size_t size = qemu_plugin_insn_size(in);
		if (conditional(d, size))
			count_insn(in, BR, kernel);
		if (kernel && n_entries && iretq(d, size))
			qemu_plugin_register_vcpu_insn_exec_cb(in, returned, QEMU_PLUGIN_CB_NO_REGS,
							       NULL);
		else if (branch(d, size))
			count_insn(in, BRA, kernel);
		if (modelled || coherent) {
			struct accessor *a = malloc(sizeof *a);
			*a = (struct accessor){ qemu_plugin_insn_vaddr(in), kernel };
			qemu_plugin_register_vcpu_mem_cb(in, accessed, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, a);
		}
		if ((modelled || coherent) && i == n - 1) {
			struct last *l = malloc(sizeof *l);
			l->learned = -1;
			qemu_plugin_register_vcpu_insn_exec_cb(in, last_started,
							       QEMU_PLUGIN_CB_NO_REGS, l);
		}
		if (with_atomics && locked(d, size)) {
			struct locked_insn *l = malloc(sizeof *l);
			*l = (struct locked_insn){ qemu_plugin_insn_vaddr(in), kernel };
			qemu_plugin_register_vcpu_insn_exec_cb(in, atomic_ran, QEMU_PLUGIN_CB_NO_REGS,
							       l);
			qemu_plugin_register_vcpu_mem_cb(in, atomic_accessed, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, l);
		}
		if (!kernel)
			instrument_mark(tb, i, d, size);
	}
}

/* The callbacks of a mark at instruction `i` of a user block, if it is one. */
static void instrument_mark(struct qemu_plugin_tb *tb, size_t i, const unsigned char *d,
			    size_t size)
{
	int mark = mark_of(d, size);
	if (!mark)
		return;
	/* The load that names the window ends the block before when the block splits between
	 * the two: its window is then the last one named (syscost checks the sequence of
	 * names). */
	if (i > 0)
		qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i - 1), named,
						 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
	qemu_plugin_register_vcpu_insn_exec_cb(qemu_plugin_tb_get_insn(tb, i), marked,
					       QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)mark);
}

/* Asleep: a user block's marks alone. */
static void translated_asleep(struct qemu_plugin_tb *tb, size_t n, bool kernel)
{
	for (size_t i = 0; !kernel && i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		instrument_mark(tb, i, qemu_plugin_insn_data(in), qemu_plugin_insn_size(in));
	}
}

/* `l1d=SETS:WAYS:LINE`: powers of two, SETS * LINE within `span` (a 4 KiB page for the L1d:
 * the index of a VIPT L1 lies in the page offset), WAYS up to 64, or up to 4096 in one set (a
 * fully associative cache). */
static bool geometry(const char *arg, const char *key, struct cache *c, unsigned span)
{
	unsigned sets, ways, line;
	size_t k = strlen(key);
	if (strncmp(arg, key, k) || arg[k] != '=' ||
	    sscanf(arg + k + 1, "%u:%u:%u", &sets, &ways, &line) != 3)
		return false;
	if (!sets || (sets & (sets - 1)) || !line || (line & (line - 1)) ||
	    (uint64_t)sets * line > span || !ways || ways > (sets == 1 ? 4096 : 64)) {
		fprintf(stderr, "tcg_count: %s: sets and line must be powers of two with sets * line "
				"<= %u, ways 1 to 64 (to 4096 in one set)\n", arg, span);
		return false;
	}
	c->sets = sets;
	c->ways = ways;
	c->line_shift = __builtin_ctz(line);
	c->misses = calloc(sets, sizeof *c->misses);
	if (sets == 1 && ways > 16)
		c->fa = fa_new(ways);
	else
		c->tags = calloc((size_t)sets * ways, sizeof *c->tags);
	return true;
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info,
							       int argc, char **argv)
{
	if (info->version.min > 1 || info->version.cur < 1)
		return -1;
	bool d = false, i = false;
	for (int a = 0; a < argc; a++) {
		if (!strncmp(argv[a], "counts=", 7) && argv[a][7]) {
			counts_path = strdup(argv[a] + 7); /* argv is QEMU's, freed after install */
			continue;
		}
		if (!strcmp(argv[a], "asleep=1")) {
			asleep = true;
			continue;
		}
		if (!strcmp(argv[a], "blocks=1")) {
			by_block = true;
			continue;
		}
		if (!strcmp(argv[a], "atomics=1")) {
			with_atomics = true;
			continue;
		}
		if (sscanf(argv[a], "vcpus=%u", &n_vcpus) == 1) {
			if (n_vcpus < 1 || n_vcpus > 56) {
				fprintf(stderr, "tcg_count: vcpus= takes 1 to 56\n");
				return -1;
			}
			continue;
		}
		unsigned mib;
		if (sscanf(argv[a], "lines=%u", &mib) == 1) {
			/* One word a line of memory: calloc's pages are the host's only once written. */
			n_lines = (uint64_t)mib << 14;
			directory = mib ? calloc(n_lines, sizeof *directory) : NULL;
			if (!directory) {
				fprintf(stderr, "tcg_count: lines= takes the guest's memory in MiB\n");
				return -1;
			}
			coherent = true;
			continue;
		}
		if (!strncmp(argv[a], "l1i_also=", 9)) {
			if (n_also == ALSO_MAX || !geometry(argv[a], "l1i_also", &also[n_also], 2u << 20))
				return -1;
			n_also++;
			continue;
		}
		if (!strncmp(argv[a], "l2=", 3)) {
			if (!geometry(argv[a], "l2", &l2, 2u << 20))
				return -1;
			with_l2 = true;
			continue;
		}
		bool *given = !strncmp(argv[a], "l1d=", 4) ? &d : !strncmp(argv[a], "l1i=", 4) ? &i : NULL;
		if (!given) {
			fprintf(stderr, "tcg_count: unknown argument %s\n", argv[a]);
			return -1;
		}
		if (!geometry(argv[a], given == &d ? "l1d" : "l1i", given == &d ? &l1d : &l1i,
			      given == &d ? 4096 : 2u << 20))
			return -1;
		*given = true;
	}
	if (d != i || ((with_l2 || n_also) && !d)) {
		fprintf(stderr, "tcg_count: give both l1d= and l1i=, or neither (and l2= and "
				"l1i_also= only with them)\n");
		return -1;
	}
	for (unsigned k = 0; k < n_also; k++)
		if (also[k].line_shift != l1i.line_shift) {
			fprintf(stderr, "tcg_count: l1i_also= takes the L1i's line size\n");
			return -1;
		}
	if (coherent && n_vcpus == 1) {
		fprintf(stderr, "tcg_count: lines= needs vcpus= of 2 or more: one vCPU shares with "
				"none\n");
		return -1;
	}
	modelled = d;
	self = id;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	return 0;
}
