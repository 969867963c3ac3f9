// SPDX-License-Identifier: GPL-2.0
/*
 * tbcount: a QEMU TCG plugin that counts the guest instructions executed at every address,
 * by translation block, and writes what was executed between two guest-chosen points.
 *
 * A cpu-clock profile in the guest cannot see code that runs with interrupts off (hard
 * interrupt handlers, spinlock_irqsave sections): its sample waits until they end. This
 * plugin sees every instruction the emulated CPUs execute, in any context, so the guest kernel
 * CPU of two drivers doing the same number of I/Os can be compared function by function
 * (benches/tb_profile.py; scripts/profile-fio.sh --insns).
 *
 * Arguments (QEMU -plugin FILE,out=PATH,mark=ADDR):
 *   out=PATH   where snapshots go (required).
 *   mark=ADDR  guest virtual address (hex) of a function entry, e.g. __x64_sys_sync: each time
 *              a block starting there executes, the plugin writes a snapshot: "mark N" and
 *              one line "ADDR INSNS EXECS" per block start executed since the previous mark
 *              (INSNS instructions in the block, EXECS executions in the interval). Without
 *              mark, one snapshot is written at exit.
 *   info=PATH  optional: for every block translated, one line "ADDR INSNS MEMOPS LAST", where
 *              MEMOPS is how many of its instructions have a memory operand (each is a
 *              soft-TLB lookup in the translated code) and LAST is the disassembly of its last
 *              instruction (what ends the block: a branch, or an instruction after which TCG
 *              leaves the translated code, e.g. sti, popf, wrmsr). Written at translation time.
 *   tlb=BITS   optional: also model QEMU's soft TLB (accel/tcg/cputlb.c) and count its misses
 *              by block. Every data access of the guest is looked up in a per-vCPU,
 *              direct-mapped table of 2^BITS 4 KiB pages indexed by the page number, with an
 *              8-entry victim table behind it that swaps on a hit and takes what a miss evicts
 *              (round robin), one such pair for code running in the kernel and one for user
 *              code (QEMU keeps one per MMU mode). A miss in both is a page-table walk in QEMU:
 *              hundreds of nanoseconds, where a hit is a few host instructions. QEMU resizes
 *              its table between 2^6 and 2^22 entries at TLB flushes by how full it was (2^8
 *              at start); BITS fixes one size. Snapshot lines "t ADDR INSNS MISSES" follow the
 *              block lines: the misses of accesses made by that block since the last mark.
 *
 * Counting is an inline 64-bit add per block execution, not atomic: two vCPUs executing the
 * same block at the same instant can lose an add (rare; both drivers are measured alike).
 * A block's instructions are counted when it starts, so a block left early by an exception or
 * interrupt counts whole: blocks end at every branch, so this over-counts by at most a block.
 *
 * Build: cc -O2 -shared -fPIC -o tbcount.so tbcount.c -lpthread
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The part of QEMU's plugin API (include/qemu/qemu-plugin.h, API version 1, QEMU 7.2) this
 * plugin calls. Debian packages no header for it; these are the documented C signatures.
 */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb_t cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn;
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
char *qemu_plugin_insn_disas(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One block start: its address and length, with the executions counted inline. */
struct block {
	uint64_t vaddr;
	uint64_t execs;      /* incremented by the translated code */
	uint64_t reported;   /* execs at the last snapshot */
	uint32_t insns;
	uint32_t used;
	uint64_t misses;          /* soft-TLB misses of its accesses (tlb=) */
	uint64_t misses_reported; /* misses at the last snapshot */
};

/* The modelled soft TLB of one vCPU: [0] kernel code's, [1] user code's (see tlb= above). */
#define MAX_VCPUS 16
#define VICTIMS 8
struct tlbsim {
	uint64_t *page[2];     /* page number + 1 per slot; 0: empty */
	uint64_t victim[2][VICTIMS];
	unsigned int next[2];  /* the victim slot a miss fills next */
};

static struct tlbsim *tlbs;
static unsigned int tlb_bits;

/* Open addressing, never resized: the translated code holds pointers into it. */
#define TABLE_BITS 21
#define TABLE_SIZE (1u << TABLE_BITS)

static struct block *table;
static size_t table_used;
static bool table_full;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static FILE *info_out;
static uint64_t mark_addr;
static bool have_mark;
static uint64_t marks;

static size_t slot_of(uint64_t vaddr, uint32_t insns)
{
	uint64_t h = (vaddr ^ ((uint64_t)insns << 48)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> (64 - TABLE_BITS));
}

/* The counter of (vaddr, insns), made on first use; NULL once the table is full. */
static struct block *lookup(uint64_t vaddr, uint32_t insns)
{
	size_t i = slot_of(vaddr, insns);

	for (size_t n = 0; n < TABLE_SIZE; n++, i = (i + 1) & (TABLE_SIZE - 1)) {
		struct block *b = &table[i];

		if (!b->used) {
			/* Keep a quarter free so probes stay short. */
			if (table_used >= TABLE_SIZE / 4 * 3) {
				table_full = true;
				return NULL;
			}
			b->used = 1;
			b->vaddr = vaddr;
			b->insns = insns;
			table_used++;
			return b;
		}
		if (b->vaddr == vaddr && b->insns == insns)
			return b;
	}
	return NULL;
}

/* Writes every block executed since the last snapshot, and the snapshot's number. */
static void snapshot(void)
{
	pthread_mutex_lock(&lock);
	marks++;
	fprintf(out, "mark %" PRIu64 "%s\n", marks, table_full ? " table-full" : "");
	for (size_t i = 0; i < TABLE_SIZE; i++) {
		struct block *b = &table[i];
		uint64_t now;

		if (!b->used)
			continue;
		now = __atomic_load_n(&b->execs, __ATOMIC_RELAXED);
		if (now != b->reported) {
			fprintf(out, "%" PRIx64 " %" PRIu32 " %" PRIu64 "\n", b->vaddr, b->insns,
				now - b->reported);
			b->reported = now;
		}
		now = __atomic_load_n(&b->misses, __ATOMIC_RELAXED);
		if (now != b->misses_reported) {
			fprintf(out, "t %" PRIx64 " %" PRIu32 " %" PRIu64 "\n", b->vaddr, b->insns,
				now - b->misses_reported);
			b->misses_reported = now;
		}
	}
	fflush(out);
	pthread_mutex_unlock(&lock);
}

static void on_mark(unsigned int vcpu_index, void *userdata)
{
	(void)vcpu_index;
	(void)userdata;
	snapshot();
}

/* One data access of block `userdata` at `vaddr`, looked up in the modelled soft TLB. */
static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t meminfo, uint64_t vaddr,
		   void *userdata)
{
	struct block *b = userdata;
	struct tlbsim *t;
	uint64_t pg = (vaddr >> 12) + 1, old;
	size_t i = (size_t)((vaddr >> 12) & ((1ull << tlb_bits) - 1));
	int k = b->vaddr >> 63 ? 0 : 1;

	(void)meminfo;
	if (vcpu_index >= MAX_VCPUS)
		return;
	t = &tlbs[vcpu_index];
	old = t->page[k][i];
	if (old == pg)
		return;
	for (int j = 0; j < VICTIMS; j++) {
		if (t->victim[k][j] == pg) {
			t->victim[k][j] = old;
			t->page[k][i] = pg;
			return;
		}
	}
	/* Counted by the vCPU's thread: two vCPUs in one block at once can lose an add. */
	b->misses++;
	t->page[k][i] = pg;
	if (old) {
		t->victim[k][t->next[k]] = old;
		t->next[k] = (t->next[k] + 1) % VICTIMS;
	}
}

/* The info line of a block just translated (see info= above). */
static void write_info(uint64_t vaddr, const struct qemu_plugin_tb *tb, size_t n)
{
	unsigned int memops = 0;
	char *last = NULL;

	for (size_t i = 0; i < n; i++) {
		char *d = qemu_plugin_insn_disas(qemu_plugin_tb_get_insn(tb, i));

		if (!d)
			continue;
		/*
		 * QEMU's i386 disassembler writes AT&T syntax, memory operands in parentheses or
		 * with a segment prefix (per-CPU data, %gs:); brackets in Intel syntax, with
		 * capstone. lea and nop compute or do nothing.
		 */
		if ((strchr(d, '(') || strchr(d, '[') || strstr(d, "s:")) && strncmp(d, "lea", 3) &&
		    strncmp(d, "nop", 3))
			memops++;
		if (i + 1 == n)
			last = d;
		else
			free(d);
	}
	pthread_mutex_lock(&lock);
	fprintf(info_out, "%" PRIx64 " %zu %u %s\n", vaddr, n, memops, last ? last : "?");
	pthread_mutex_unlock(&lock);
	free(last);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct block *b;

	(void)id;
	pthread_mutex_lock(&lock);
	b = lookup(vaddr, (uint32_t)n);
	pthread_mutex_unlock(&lock);
	if (b)
		qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
	if (b && tlbs) {
		for (size_t i = 0; i < n; i++)
			qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), on_mem,
							 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, b);
	}
	if (info_out && n > 0)
		write_info(vaddr, tb, n);
	if (have_mark && vaddr == mark_addr)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata)
{
	(void)id;
	(void)userdata;
	if (!have_mark)
		snapshot();
	fclose(out);
	if (info_out)
		fclose(info_out);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info, int argc,
							       char **argv)
{
	const char *path = NULL;
	const char *info_path = NULL;

	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			path = argv[i] + 4;
		} else if (!strncmp(argv[i], "info=", 5)) {
			info_path = argv[i] + 5;
		} else if (!strncmp(argv[i], "tlb=", 4)) {
			char *end;

			tlb_bits = (unsigned int)strtoul(argv[i] + 4, &end, 10);
			if (*end || end == argv[i] + 4 || tlb_bits < 4 || tlb_bits > 22) {
				fprintf(stderr, "tbcount: bad tlb '%s' (bits, 4 to 22)\n", argv[i] + 4);
				return -1;
			}
		} else if (!strncmp(argv[i], "mark=", 5)) {
			char *end;

			mark_addr = strtoull(argv[i] + 5, &end, 16);
			if (*end || end == argv[i] + 5) {
				fprintf(stderr, "tbcount: bad mark '%s'\n", argv[i] + 5);
				return -1;
			}
			have_mark = true;
		} else {
			fprintf(stderr, "tbcount: unknown argument '%s'\n", argv[i]);
			return -1;
		}
	}
	if (!path) {
		fprintf(stderr, "tbcount: out=PATH is required\n");
		return -1;
	}
	out = fopen(path, "w");
	if (info_path)
		info_out = fopen(info_path, "w");
	table = calloc(TABLE_SIZE, sizeof(*table));
	if (!out || !table || (info_path && !info_out)) {
		fprintf(stderr, "tbcount: cannot open %s or allocate the table\n", path);
		return -1;
	}
	if (tlb_bits) {
		tlbs = calloc(MAX_VCPUS, sizeof(*tlbs));
		for (int v = 0; tlbs && v < MAX_VCPUS; v++) {
			for (int k = 0; k < 2; k++) {
				tlbs[v].page[k] = calloc(1ull << tlb_bits, sizeof(uint64_t));
				if (!tlbs[v].page[k]) {
					fprintf(stderr, "tbcount: cannot allocate the TLB model\n");
					return -1;
				}
			}
		}
		if (!tlbs) {
			fprintf(stderr, "tbcount: cannot allocate the TLB model\n");
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
