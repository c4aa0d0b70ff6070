/*
 * The audit_filter_syscall() list walk of kernel/auditsc.c, re-created as a measurement kernel
 * (the syscall-latency post and the audit series). Compiled by build.rs with the system C compiler at -O2, so its code
 * generation is a C compiler's, as in the kernel, not Rust's.
 *
 * Layout as in the kernel (pahole in the syscall-latency post):
 *   struct audit_entry  { list_head list @0 (16); rcu @16 (16); audit_krule rule @32 (376) }  408 B
 *   struct audit_krule  { ...; u32 mask[64] @16 (256); ... }                                  376 B
 *   struct audit_context{ ...; int major @20; ... }                                            920 B
 * The walk touches the first cache line of each entry: list.next @0 and the mask word
 * @48 + 4 * (major / 32) (@52 for getpid, 39), and ctx->major's line unless it is cached.
 *
 * One function per variant, each matching one of the 2022 audit syscall-exit series'
 * patches:
 *   baseline      static, called only with &replica_list: GCC const-propagates the list head,
 *                 so the loop's exit test compares against an immediate address (cmp $imm) and
 *                 reloads ctx->major every iteration (alias analysis cannot keep it).
 *   cached_major  patch 1: `unsigned long major = ctx->major;` once, so the mask-word index and
 *                 bit are computed outside the loop and ctx's cache line is not touched in it.
 *   unlikely      patch 2: unlikely(audit_in_mask()), so the call of audit_filter_rules() and
 *                 its spills move to the cold path and the common path falls through.
 *   nonstatic     patch 3: not static, so the list arrives in a register and the exit test is
 *                 cmp %reg,%reg (macro-fusable with the jne).
 *   all_three     the three patches together.
 * tests/replica_asm.rs inspects the generated assembly for these differences.
 */
#include <stdint.h>
#include <stddef.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define AUDIT_BITMASK_SIZE 64
#define AUDIT_WORD(nr) ((uint32_t)((nr) / 32))
#define AUDIT_BIT(nr)  (1U << ((nr) - AUDIT_WORD(nr) * 32))

struct list_head { struct list_head *next, *prev; };

struct audit_krule {
	uint32_t pflags, flags, listnr, action;      /* 0  */
	uint32_t mask[AUDIT_BITMASK_SIZE];           /* 16 */
	uint32_t buflen, field_count;                /* 272 */
	uint32_t pid_field;                          /* 280: what audit_filter_rules compares */
	char     rest[376 - 284];
};

struct audit_entry {
	struct list_head list;                       /* 0  */
	char rcu[16];                                /* 16 */
	struct audit_krule rule;                     /* 32 */
};

struct audit_context {
	int dummy, in_syscall, serial_hi, serial_lo, state;  /* 0..20 */
	int major;                                           /* 20 */
	int current_state;
	char rest[920 - 28];
};

_Static_assert(sizeof(struct audit_entry) == 408, "audit_entry is 408 bytes as in the kernel");
_Static_assert(offsetof(struct audit_entry, rule.mask) == 48, "mask at the kernel's offset");
_Static_assert(offsetof(struct audit_context, major) == 20, "major at the kernel's offset");
_Static_assert(sizeof(struct audit_context) == 920, "audit_context is 920 bytes");

struct list_head replica_list = { &replica_list, &replica_list };
/* How many times audit_filter_rules() ran: the answer every variant must agree on. */
unsigned long replica_filter_calls;

/* The out-of-line field check of a rule that names the syscall: it fails on its pid field. */
/* noipa: as audit_filter_rules() is to the kernel's compiler, its body is opaque here, so the
 * compiler must assume the call may write *ctx (GCC 12 otherwise proves it does not and hoists
 * ctx->major out of every variant's loop, which the kernel's code does not get). */
__attribute__((noinline, noipa)) int replica_filter_rules(struct audit_context *ctx,
						    struct audit_krule *rule, int *state)
{
	replica_filter_calls++;
	if (rule->pid_field == (uint32_t)ctx->serial_lo) {
		*state = 2;
		return 1;
	}
	return 0;
}

static inline int audit_in_mask(const struct audit_krule *rule, unsigned long val)
{
	uint32_t word;

	if (val > 0xffffffff)
		return 0;
	word = AUDIT_WORD(val);
	if (word >= AUDIT_BITMASK_SIZE)
		return 0;
	return rule->mask[word] & AUDIT_BIT(val);
}

#define container(ptr) ((struct audit_entry *)(ptr))

/* --- baseline --------------------------------------------------------------------------- */
static __attribute__((noinline)) int filter_baseline(struct audit_context *ctx,
						     struct list_head *list)
{
	struct list_head *p;
	int state;

	for (p = list->next; p != list; p = p->next) {
		struct audit_entry *e = container(p);
		if (audit_in_mask(&e->rule, ctx->major) &&
		    replica_filter_rules(ctx, &e->rule, &state)) {
			ctx->current_state = state;
			return state;
		}
	}
	return 0;
}

/* --- patch 1: cache ctx->major ----------------------------------------------------------- */
static __attribute__((noinline)) int filter_cached_major(struct audit_context *ctx,
							 struct list_head *list)
{
	struct list_head *p;
	unsigned long major = ctx->major;
	int state;

	for (p = list->next; p != list; p = p->next) {
		struct audit_entry *e = container(p);
		if (audit_in_mask(&e->rule, major) &&
		    replica_filter_rules(ctx, &e->rule, &state)) {
			ctx->current_state = state;
			return state;
		}
	}
	return 0;
}

/* --- patch 2: unlikely() ----------------------------------------------------------------- */
static __attribute__((noinline)) int filter_unlikely(struct audit_context *ctx,
						     struct list_head *list)
{
	struct list_head *p;
	int state;

	for (p = list->next; p != list; p = p->next) {
		struct audit_entry *e = container(p);
		if (unlikely(audit_in_mask(&e->rule, ctx->major))) {
			if (replica_filter_rules(ctx, &e->rule, &state)) {
				ctx->current_state = state;
				return state;
			}
		}
	}
	return 0;
}

/* --- patch 3: no static linkage ---------------------------------------------------------- */
__attribute__((noinline)) int replica_filter_nonstatic(struct audit_context *ctx,
						       struct list_head *list)
{
	struct list_head *p;
	int state;

	for (p = list->next; p != list; p = p->next) {
		struct audit_entry *e = container(p);
		if (audit_in_mask(&e->rule, ctx->major) &&
		    replica_filter_rules(ctx, &e->rule, &state)) {
			ctx->current_state = state;
			return state;
		}
	}
	return 0;
}

/* --- all three ---------------------------------------------------------------------------- */
__attribute__((noinline)) int replica_filter_all_three(struct audit_context *ctx,
						       struct list_head *list)
{
	struct list_head *p;
	unsigned long major = ctx->major;
	int state;

	for (p = list->next; p != list; p = p->next) {
		struct audit_entry *e = container(p);
		if (unlikely(audit_in_mask(&e->rule, major))) {
			if (replica_filter_rules(ctx, &e->rule, &state)) {
				ctx->current_state = state;
				return state;
			}
		}
	}
	return 0;
}

/* Entry points: `walks` list walks with one variant. The static variants are only ever given
 * &replica_list, which is what lets GCC propagate it. */
int replica_walk(int variant, struct audit_context *ctx, unsigned long walks)
{
	int r = 0;
	unsigned long i;

	switch (variant) {
	case 0:
		for (i = 0; i < walks; i++)
			r |= filter_baseline(ctx, &replica_list);
		break;
	case 1:
		for (i = 0; i < walks; i++)
			r |= filter_cached_major(ctx, &replica_list);
		break;
	case 2:
		for (i = 0; i < walks; i++)
			r |= filter_unlikely(ctx, &replica_list);
		break;
	case 3:
		for (i = 0; i < walks; i++)
			r |= replica_filter_nonstatic(ctx, &replica_list);
		break;
	default:
		for (i = 0; i < walks; i++)
			r |= replica_filter_all_three(ctx, &replica_list);
		break;
	}
	return r;
}

/* Sizes for the Rust side to check against its own constants. */
size_t replica_entry_size(void) { return sizeof(struct audit_entry); }
size_t replica_context_size(void) { return sizeof(struct audit_context); }
size_t replica_mask_offset(void) { return offsetof(struct audit_entry, rule.mask); }
size_t replica_pid_offset(void) { return offsetof(struct audit_entry, rule.pid_field); }
