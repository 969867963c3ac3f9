// SPDX-License-Identifier: GPL-2.0
/*
 * premap-stress DEV LBS SECONDS NPROC BASE_MIB [SEED]: a multi-process stress test of NVMe
 * passthrough I/O with io_uring registered buffers (issue 8) on a namespace character device
 * (/dev/rng<C>n<N>, or the C driver's /dev/ng<C>n<N> as a reference).
 *
 * NPROC worker processes run for SECONDS (longer, up to 4x, until every kind of event below has
 * happened at least once), each on its own 2 MiB range of the namespace
 * starting at BASE_MIB (slot s: BASE_MIB + 2 s MiB), LBS the namespace's block size. A worker
 * sets up a ring with 128-byte SQEs and 32-byte CQEs, registers 8 buffers of 64 KiB and keeps
 * up to 8 NVMe Write/Read uring_cmds (NVME_URING_CMD_IO) in flight, mostly with registered
 * buffers (IORING_URING_CMD_FIXED), of 1..16 units of 4 KiB. Every 512 bytes written carry a
 * header (magic, slot, generation, writer pid, byte offset) and a payload derived from them,
 * so a read shows which write it returns. At random it:
 *  - unregisters and registers its buffers again (sometimes with I/O in flight);
 *  - replaces a buffer's pages at the same address (mmap MAP_FIXED: anonymous pages, or a new
 *    memfd whose pages stay visible through a second mapping), with different content; while
 *    the old registration holds, a fixed read must land in the old pages and leave the new ones
 *    alone; after registering again (all buffers, or IORING_REGISTER_BUFFERS_UPDATE of that
 *    one), a fixed write from the buffer must store the new pages' data and a fixed read must
 *    land in the new pages, never the old ones;
 *  - closes the device file with I/O in flight (the commands still complete and are checked);
 *  - closes the ring with I/O in flight (their writes become "abandoned", see below), or
 *    _exit()s with I/O in flight; the parent also SIGKILLs random workers and starts a new
 *    worker on the slot until the time is up.
 * A journal in memory shared with the parent holds, per 4 KiB unit, the generation of the last
 * acknowledged write and of a write in flight. Every read is checked against it: a unit must
 * hold its last acknowledged write; a unit whose write was abandoned may hold that write or the
 * one before (a later read showing the new one settles it; such units are not written again
 * until then), or, while that write may still be landing, a mix of both at any byte (the
 * device's backing file can serve a read concurrent with a write half copied; seen with the C
 * driver too). At the end the parent reads every range back through NVME_IOCTL_IO64_CMD and
 * checks it the same way, except that no mix is allowed then.
 *
 * A worker still running 120 s after the time is up (a command that never completes) is
 * killed and counted as an error (the guest kernel has no POSIX timers for a per-call alarm).
 *
 * With PREMAP_STRESS_CORRUPT in the environment, one acknowledged unit is zeroed on the device
 * before the final check, which must then fail (the checks' self-test).
 *
 * Prints one line per problem ("premap-stress: error: ...") and the summary
 * "premap-stress: ... N errors"; exits 0 iff there was no error.
 * Built statically on the host (see raw-uring.h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>

#include "raw-uring.h"

#define UNIT 4096u		/* journal granule */
#define SECT 512u		/* pattern granule (header + payload) */
#define MAXU 16u		/* units per I/O */
#define BUFSZ (MAXU * UNIT)	/* one registered buffer */
#define NBUF 8			/* registered buffers per worker */
#define QD NBUF			/* I/Os in flight per worker (one buffer each) */
#define UNITS 512u		/* units per slot: 2 MiB */
#define MAXPROC 32
#define MAGIC 0x504d5354u	/* "PMST" */
#define EXIT_DELIBERATE 77	/* worker _exit()ed with I/O in flight on purpose */

enum ustate { U_OK, U_WRITING, U_ABANDONED };

/* One 4 KiB unit of a slot's range. */
struct unit {
	uint32_t acked;		/* generation of the last acknowledged write, 0: never written */
	uint32_t inflight;	/* generation of the write in flight or abandoned */
	uint32_t state;		/* enum ustate */
};

/* Counters, summed over a slot's workers. */
struct stats {
	uint64_t writes, reads, fixed, plain, units_checked;
	uint64_t registers, unregisters, updates, unreg_inflight;
	uint64_t remaps, remap_memfd, old_reg_checks, new_page_checks;
	uint64_t close_dev, close_ring, exits, killed, abandoned, settled, incarnations;
	uint64_t torn;	/* reads of an abandoned unit that showed both writes mixed */
};

struct slot {
	uint32_t next_gen;
	struct unit u[UNITS];
	struct stats st;
};

struct shared {
	uint64_t deadline_ms;
	uint32_t errors;
	struct slot slot[MAXPROC];
};

static struct shared *sh;
static const char *dev_path;
static uint32_t lbs, nsid;
static uint64_t base;		/* byte offset of slot 0 */
static int slot_id = -1;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void error(const char *fmt, ...)
{
	uint32_t n = __atomic_fetch_add(&sh->errors, 1, __ATOMIC_RELAXED);
	va_list ap;

	if (n >= 20)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "premap-stress: error: slot %d pid %d: ", slot_id, getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* xorshift64* */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd_below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t unit_off(int slot, uint32_t u)
{
	return base + (uint64_t)slot * UNITS * UNIT + (uint64_t)u * UNIT;
}

/* Fills one unit with the pattern of write `gen` of `slot` at byte offset `off`. */
static void fill_unit(unsigned char *p, int slot, uint32_t gen, uint64_t off)
{
	for (uint32_t s = 0; s < UNIT; s += SECT) {
		uint32_t *h = (uint32_t *)(p + s);
		uint64_t *w = (uint64_t *)(p + s);
		uint64_t x = mix(((uint64_t)slot << 48) ^ ((uint64_t)gen << 16) ^ (off + s));

		h[0] = MAGIC;
		h[1] = (uint32_t)slot;
		h[2] = gen;
		h[3] = (uint32_t)getpid();
		w[2] = off + s;
		for (uint32_t i = 3; i < SECT / 8; i++)
			w[i] = (x = mix(x + i));
	}
}

/* The generation of a 512-byte piece of a write of `slot` at `off`; -1 if it is none. */
static int64_t sect_gen(const unsigned char *p, int slot, uint64_t off)
{
	const uint32_t *h = (const uint32_t *)p;
	const uint64_t *w = (const uint64_t *)p;
	uint32_t gen = h[2];
	uint64_t x = mix(((uint64_t)slot << 48) ^ ((uint64_t)gen << 16) ^ off);

	if (h[0] != MAGIC || h[1] != (uint32_t)slot || w[2] != off)
		return -1;
	for (uint32_t i = 3; i < SECT / 8; i++)
		if (w[i] != (x = mix(x + i)))
			return -1;
	return gen;
}

/*
 * The generation a unit holds if it is a complete, consistent write of `slot` at `off`
 * (every 512-byte piece of the same write); -1 otherwise.
 */
static int64_t unit_gen(const unsigned char *p, int slot, uint64_t off)
{
	int64_t gen = sect_gen(p, slot, off);

	for (uint32_t s = SECT; s < UNIT && gen >= 0; s += SECT)
		if (sect_gen(p + s, slot, off + s) != gen)
			return -1;
	return gen;
}

/*
 * Whether every byte of a unit is the byte generation `a` or generation `b` of `slot` has at
 * that place (the writer's pid in each piece's header is not compared). A write abandoned in
 * flight may still be landing while the unit is read, and the emulated device's backing file
 * serves a read concurrent with a write to the same bytes from its page cache, where the write
 * may be copied in only partly: a mix of both, at any byte, is allowed. Any other byte (the
 * read buffer's fill, another unit's or slot's data, zeros) is not.
 */
static int unit_mixed(const unsigned char *p, int slot, uint64_t off, uint32_t a, uint32_t b)
{
	static unsigned char ea[UNIT], eb[UNIT];

	fill_unit(ea, slot, a, off);
	fill_unit(eb, slot, b, off);
	for (uint32_t i = 0; i < UNIT; i++) {
		if (i % SECT >= 12 && i % SECT < 16)
			continue;	/* h[3]: the writer's pid */
		if (p[i] != ea[i] && p[i] != eb[i])
			return 0;
	}
	return 1;
}

/* Set by final_check(): every write has ended. */
static int final_phase;

/*
 * Checks unit `u` of `slot` read into `p` against the journal; settles an abandoned write the
 * read shows. Returns 0 if the content is allowed.
 */
static int check_unit(int slot, uint32_t u, const unsigned char *p, const char *what)
{
	struct slot *sl = &sh->slot[slot];
	struct unit *j = &sl->u[u];
	int64_t g = unit_gen(p, slot, unit_off(slot, u));

	if (j->state == U_ABANDONED) {
		if (g >= 0 && (uint32_t)g == j->inflight) {
			j->acked = j->inflight;
			j->state = U_OK;
			sl->st.settled++;
			return 0;
		}
		if (j->acked == 0)
			return 0;
		if (g >= 0 && (uint32_t)g == j->acked)
			return 0;
		/*
		 * Pieces or bytes of both: the abandoned write was landing (it stays unsettled).
		 * Not at the final check: every write has ended by then, so a unit must hold one.
		 */
		if (!final_phase && unit_mixed(p, slot, unit_off(slot, u), j->acked, j->inflight)) {
			sl->st.torn++;
			return 0;
		}
	} else if (j->acked == 0 || (g >= 0 && (uint32_t)g == j->acked)) {
		if (j->acked)
			sl->st.units_checked++;
		return 0;
	}
	error("%s: unit %u (offset %llu) holds generation %lld, journal says acked %u%s %u "
	      "(first words %08x %08x %08x %08x)", what, u,
	      (unsigned long long)unit_off(slot, u), (long long)g, j->acked,
	      j->state == U_ABANDONED ? " or abandoned" : ", in flight", j->inflight,
	      ((const uint32_t *)p)[0], ((const uint32_t *)p)[1], ((const uint32_t *)p)[2],
	      ((const uint32_t *)p)[3]);
	return -1;
}

/* ---- worker ------------------------------------------------------------------------------ */

/* A data buffer: 64 KiB at a fixed address; pages anonymous or from a memfd (then `alias`
 * maps the same pages elsewhere, so they can be watched after the address gets new pages). */
struct buf {
	unsigned char *addr;
	unsigned char *alias;
	int memfd;
	int busy;
};

struct io {
	int used, write, fixed, done;
	int nocheck;		/* a read checked by its caller (it lands elsewhere) */
	int b;
	uint32_t u0, n;
	int32_t res;
};

struct worker {
	int slot;
	int dev;
	struct ring r;
	struct buf b[NBUF];
	struct io io[QD];
	unsigned int inflight;
	int registered;
	unsigned char busy[UNITS];
	struct stats *st;
	struct slot *sl;
};

static int map_pages(struct buf *b, int fixed_addr, int memfd)
{
	int flags = fixed_addr ? MAP_FIXED : 0;
	void *p;

	b->memfd = -1;
	b->alias = NULL;
	if (memfd) {
		b->memfd = memfd_create("premap-stress", 0);
		if (b->memfd < 0 || ftruncate(b->memfd, BUFSZ))
			return -1;
		p = mmap(fixed_addr ? b->addr : NULL, BUFSZ, PROT_READ | PROT_WRITE,
			 MAP_SHARED | flags, b->memfd, 0);
		if (p == MAP_FAILED)
			return -1;
		b->alias = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE, MAP_SHARED, b->memfd, 0);
		if (b->alias == MAP_FAILED)
			return -1;
	} else {
		p = mmap(fixed_addr ? b->addr : NULL, BUFSZ, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
		if (p == MAP_FAILED)
			return -1;
	}
	b->addr = p;
	memset(b->addr, 0x11 + (int)rnd_below(200), BUFSZ);
	return 0;
}

static void unmap_buf(struct buf *b)
{
	if (b->alias)
		munmap(b->alias, BUFSZ);
	if (b->memfd >= 0)
		close(b->memfd);
	munmap(b->addr, BUFSZ);
	memset(b, 0, sizeof(*b));
	b->memfd = -1;
}

static int do_register(struct worker *w)
{
	struct iovec iov[NBUF];
	int ret;

	for (int i = 0; i < NBUF; i++) {
		iov[i].iov_base = w->b[i].addr;
		iov[i].iov_len = BUFSZ;
	}
	if (rnd_below(2)) {
		ret = uring_sys_register(w->r.fd, IORING_REGISTER_BUFFERS, iov, NBUF);
	} else {
		struct io_uring_rsrc_register rr;
		uint64_t tags[NBUF] = { 0 };

		memset(&rr, 0, sizeof(rr));
		rr.nr = NBUF;
		rr.data = (uintptr_t)iov;
		rr.tags = (uintptr_t)tags;
		ret = uring_sys_register(w->r.fd, IORING_REGISTER_BUFFERS2, &rr, sizeof(rr));
	}
	if (ret < 0) {
		error("register buffers: %s", strerror(errno));
		return -1;
	}
	w->registered = 1;
	w->st->registers++;
	return 0;
}

static int do_unregister(struct worker *w)
{
	if (w->inflight)
		w->st->unreg_inflight++;
	if (uring_sys_register(w->r.fd, IORING_UNREGISTER_BUFFERS, NULL, 0) < 0) {
		error("unregister buffers: %s", strerror(errno));
		return -1;
	}
	w->registered = 0;
	w->st->unregisters++;
	return 0;
}

static void complete(struct worker *w, struct io *io)
{
	unsigned char *p = w->b[io->b].addr;

	if (io->res != 0) {
		error("%s of units %u+%u (%s buffer %d) ended with %d", io->write ? "write" : "read",
		      io->u0, io->n, io->fixed ? "fixed" : "plain", io->b, io->res);
	}
	for (uint32_t i = 0; i < io->n; i++) {
		struct unit *j = &w->sl->u[io->u0 + i];

		if (io->write) {
			if (io->res == 0) {
				j->acked = j->inflight;
				j->state = U_OK;
			} else {
				j->state = U_ABANDONED;
			}
		} else if (io->res == 0 && !io->nocheck) {
			check_unit(w->slot, io->u0 + i, p + i * UNIT, "read");
		}
		w->busy[io->u0 + i] = 0;
	}
	w->b[io->b].busy = 0;
	io->done = 1;
}

/* Reaps completions; waits for at least `min` if given. */
static void reap(struct worker *w, unsigned int min)
{
	struct io_uring_cqe *cqe;

	if (min) {
		int ret;

		ret = uring_submit(&w->r, min);
		if (ret < 0)
			error("io_uring_enter (wait): %s", strerror(-ret));
	}
	while ((cqe = uring_peek_cqe(&w->r))) {
		struct io *io = &w->io[cqe->user_data];

		if (cqe->user_data >= QD || !io->used) {
			error("unexpected completion user_data %llu res %d",
			      (unsigned long long)cqe->user_data, cqe->res);
		} else {
			io->res = cqe->res;
			io->used = 0;
			w->inflight--;
			complete(w, io);
		}
		uring_cqe_seen(&w->r);
	}
}

/* start_io flags */
#define IO_NOFILL 1		/* read: leave the buffer as it is */
#define IO_NOCHECK 2		/* read: the caller checks where it landed */

/*
 * Starts an I/O of units u0..u0+n-1 with buffer b (write: fills it with new generations
 * first; read: fills it with 0xee unless IO_NOFILL); returns its index.
 */
static int start_io(struct worker *w, int write, int fixed, int b, uint32_t u0, uint32_t n,
		    int flags)
{
	struct io_uring_sqe *sqe;
	struct nvme_uring_cmd *c;
	uint64_t off = unit_off(w->slot, u0);
	int idx;

	for (idx = 0; idx < QD && w->io[idx].used; idx++)
		;
	if (idx == QD)
		return -1;
	if (write) {
		for (uint32_t i = 0; i < n; i++) {
			struct unit *j = &w->sl->u[u0 + i];

			j->inflight = ++w->sl->next_gen;
			j->state = U_WRITING;
			fill_unit(w->b[b].addr + i * UNIT, w->slot, j->inflight, off + i * UNIT);
		}
		w->st->writes++;
	} else {
		if (!(flags & IO_NOFILL))
			memset(w->b[b].addr, 0xee, n * UNIT);
		w->st->reads++;
	}
	for (uint32_t i = 0; i < n; i++)
		w->busy[u0 + i] = 1;
	w->b[b].busy = 1;
	w->io[idx] = (struct io){ .used = 1, .write = write, .fixed = fixed, .b = b, .u0 = u0,
				  .n = n, .nocheck = !!(flags & IO_NOCHECK) };
	if (fixed)
		w->st->fixed++;
	else
		w->st->plain++;
	sqe = uring_get_sqe(&w->r);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = w->dev;
	sqe->cmd_op = NVME_URING_CMD_IO;
	sqe->user_data = (uint64_t)idx;
	if (fixed) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = (uint16_t)b;
	}
	c = (struct nvme_uring_cmd *)sqe->cmd;
	c->opcode = write ? 0x01 : 0x02;
	c->nsid = nsid;
	c->addr = (uintptr_t)w->b[b].addr;
	c->data_len = n * UNIT;
	c->cdw10 = (uint32_t)(off / lbs);
	c->cdw11 = (uint32_t)((off / lbs) >> 32);
	c->cdw12 = n * UNIT / lbs - 1;
	w->inflight++;
	if (uring_submit(&w->r, 0) != 1) {
		error("submit failed");
		_exit(4);
	}
	return idx;
}

static void wait_io(struct worker *w, int idx)
{
	while (!w->io[idx].done)
		reap(w, 1);
}

/* A free run of n units (not busy; no abandoned unit if `for_write`); -1 if none found. */
static int64_t pick_units(struct worker *w, uint32_t n, int for_write)
{
	for (int tries = 0; tries < 8; tries++) {
		uint32_t u0 = rnd_below(UNITS - n + 1), i;

		for (i = 0; i < n; i++) {
			if (w->busy[u0 + i])
				break;
			if (for_write && w->sl->u[u0 + i].state != U_OK)
				break;
		}
		if (i == n)
			return u0;
	}
	return -1;
}

static int free_buf(struct worker *w)
{
	int b0 = (int)rnd_below(NBUF);

	for (int i = 0; i < NBUF; i++)
		if (!w->b[(b0 + i) % NBUF].busy)
			return (b0 + i) % NBUF;
	return -1;
}

/* A free buffer to give new pages: while the worker has not checked an old registration yet,
 * one with a memfd alias if there is one (only those can show the old pages). */
static int remap_buf(struct worker *w)
{
	if (w->st->old_reg_checks == 0)
		for (int i = 0; i < NBUF; i++)
			if (!w->b[i].busy && w->b[i].alias)
				return i;
	return free_buf(w);
}

/* Checksum of 64 KiB (to see whether pages changed). */
static uint64_t sum(const unsigned char *p)
{
	uint64_t s = 0;

	for (size_t i = 0; i < BUFSZ / 8; i++)
		s = mix(s + ((const uint64_t *)p)[i]);
	return s;
}

/*
 * Gives buffer `b` new pages at the same address with different content, checks that the old
 * registration still uses the old pages, registers again (all, or an update of this one), and
 * checks that fixed I/O now uses the new pages only.
 */
static void remap_same_address(struct worker *w, int b)
{
	struct buf old = w->b[b], nb = { .addr = old.addr };
	uint32_t n = 1 + rnd_below(MAXU);
	int64_t u0;
	int idx;

	if (map_pages(&nb, 1, w->st->old_reg_checks == 0 || rnd_below(2))) {
		error("remap at %p: %s", (void *)old.addr, strerror(errno));
		return;
	}
	w->st->remaps++;
	if (nb.memfd >= 0)
		w->st->remap_memfd++;
	w->b[b] = nb;
	/* Old registration: a fixed read lands in the old pages (only visible through a memfd
	 * alias), the new pages keep their content. */
	if (old.alias && w->registered && (u0 = pick_units(w, n, 1)) >= 0) {
		uint64_t before;

		memset(old.alias, 0xc3, BUFSZ);
		memset(nb.addr, 0x3c, BUFSZ);
		before = sum(nb.addr);
		idx = start_io(w, 0, 1, b, (uint32_t)u0, n, IO_NOFILL | IO_NOCHECK);
		wait_io(w, idx);
		if (w->io[idx].res == 0)
			for (uint32_t i = 0; i < n; i++)
				check_unit(w->slot, (uint32_t)u0 + i, old.alias + i * UNIT,
					   "fixed read with the old registration (old pages)");
		if (sum(nb.addr) != before)
			error("fixed read with the old registration changed the new pages at %p",
			      (void *)nb.addr);
		w->st->old_reg_checks++;
	}
	/* Register again: the whole table, or an update of this buffer only. */
	if (w->registered && rnd_below(2)) {
		struct io_uring_rsrc_update2 up;
		struct iovec iov = { .iov_base = nb.addr, .iov_len = BUFSZ };
		uint64_t tag = 0;

		memset(&up, 0, sizeof(up));
		up.offset = (uint32_t)b;
		up.data = (uintptr_t)&iov;
		up.tags = (uintptr_t)&tag;
		up.nr = 1;
		if (uring_sys_register(w->r.fd, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up)) != 1)
			error("buffers update: %s", strerror(errno));
		w->st->updates++;
	} else {
		if (w->registered)
			do_unregister(w);
		do_register(w);
	}
	/* New pages: a fixed write from them, then a fixed read into them (old pages watched). */
	if ((u0 = pick_units(w, n, 1)) >= 0 && w->registered) {
		uint64_t old_sum = old.alias ? sum(old.alias) : 0;

		idx = start_io(w, 1, 1, b, (uint32_t)u0, n, 0);
		wait_io(w, idx);
		idx = start_io(w, 0, 1, b, (uint32_t)u0, n, 0);	/* checks what it reads */
		wait_io(w, idx);
		if (w->io[idx].res == 0) {
			for (uint32_t i = 0; i < n; i++) {
				int64_t g = unit_gen(nb.addr + i * UNIT, w->slot,
						     unit_off(w->slot, (uint32_t)u0 + i));

				if (g < 0 || (uint32_t)g != w->sl->u[u0 + i].acked)
					error("fixed read after re-registering did not land in the new "
					      "pages at %p (unit %u: generation %lld, expected %u)",
					      (void *)nb.addr, (uint32_t)u0 + i, (long long)g,
					      w->sl->u[u0 + i].acked);
			}
		}
		if (old.alias && sum(old.alias) != old_sum)
			error("fixed I/O after re-registering changed the old pages of %p",
			      (void *)nb.addr);
		w->st->new_page_checks++;
	}
	if (old.alias)
		munmap(old.alias, BUFSZ);
	if (old.memfd >= 0)
		close(old.memfd);
}

static int open_dev(void)
{
	int fd = open(dev_path, O_RDWR);

	if (fd < 0) {
		error("open %s: %s", dev_path, strerror(errno));
		_exit(5);
	}
	return fd;
}

/* Ring, buffers and registration of a worker (again after closing the ring). */
static void setup(struct worker *w)
{
	int ret = uring_init(&w->r, 2 * QD, IORING_SETUP_SQE128 | IORING_SETUP_CQE32);

	if (ret) {
		error("io_uring_setup: %s", strerror(-ret));
		_exit(5);
	}
	for (int i = 0; i < NBUF; i++) {
		if (map_pages(&w->b[i], 0, rnd_below(4) == 0)) {
			error("mmap: %s", strerror(errno));
			_exit(5);
		}
	}
	memset(w->io, 0, sizeof(w->io));
	memset(w->busy, 0, sizeof(w->busy));
	w->inflight = 0;
	w->registered = 0;
	if (do_register(w))
		_exit(5);
}

/* Marks the writes in flight abandoned and forgets the ring and buffers (closing the ring
 * with I/O in flight); the buffers' pages stay pinned by the dying ring until its I/O ends. */
static void abandon(struct worker *w)
{
	for (int i = 0; i < QD; i++) {
		struct io *io = &w->io[i];

		if (!io->used)
			continue;
		if (io->write)
			for (uint32_t k = 0; k < io->n; k++)
				w->sl->u[io->u0 + k].state = U_ABANDONED;
		w->st->abandoned++;
	}
	uring_exit(&w->r);
	for (int i = 0; i < NBUF; i++)
		unmap_buf(&w->b[i]);
}

static void worker(int slot)
{
	struct worker w = { .slot = slot };

	slot_id = slot;
	rng_state = mix(((uint64_t)getpid() << 20) ^ now_ms() ^ (uint64_t)slot) | 1;
	w.sl = &sh->slot[slot];
	w.st = &w.sl->st;
	w.st->incarnations++;
	/* Writes a previous worker of this slot left in flight may or may not have happened. */
	for (uint32_t u = 0; u < UNITS; u++)
		if (w.sl->u[u].state == U_WRITING)
			w.sl->u[u].state = U_ABANDONED;
	w.dev = open_dev();
	setup(&w);
	while (now_ms() < __atomic_load_n(&sh->deadline_ms, __ATOMIC_RELAXED)) {
		uint32_t ev = rnd_below(1000);
		int b;

		if (ev < 8) {			/* unregister + register, maybe with I/O in flight */
			if (rnd_below(2))
				while (w.inflight)
					reap(&w, 1);
			if (w.registered)
				do_unregister(&w);
			do_register(&w);
			continue;
		}
		if (ev < 20 && (b = remap_buf(&w)) >= 0) {	/* new pages at the same address */
			remap_same_address(&w, b);
			continue;
		}
		if (ev < 24 && w.inflight) {	/* close the device file with I/O in flight */
			close(w.dev);
			w.st->close_dev++;
			while (w.inflight)
				reap(&w, 1);
			w.dev = open_dev();
			continue;
		}
		if (ev < 27 && w.inflight) {	/* close the ring with I/O in flight */
			w.st->close_ring++;
			abandon(&w);
			setup(&w);
			continue;
		}
		if (ev < 29 && w.inflight >= 2) {	/* exit with I/O in flight */
			w.st->exits++;
			_exit(EXIT_DELIBERATE);
		}
		if (w.inflight < QD && (b = free_buf(&w)) >= 0) {
			int write = rnd_below(100) < 55;
			uint32_t n = 1 + rnd_below(MAXU);
			int64_t u0 = pick_units(&w, n, write);
			int fixed = w.registered && rnd_below(100) < 85;

			if (u0 >= 0) {
				start_io(&w, write, fixed, b, (uint32_t)u0, n, 0);
				continue;
			}
		}
		if (w.inflight)
			reap(&w, 1);
	}
	while (w.inflight)
		reap(&w, 1);
	if (w.registered)
		do_unregister(&w);
	uring_exit(&w.r);
	for (int i = 0; i < NBUF; i++)
		unmap_buf(&w.b[i]);
	close(w.dev);
	_exit(0);
}

/* ---- parent ------------------------------------------------------------------------------ */

static pid_t spawn(int slot)
{
	pid_t p = fork();

	if (p < 0) {
		perror("fork");
		exit(1);
	}
	if (p == 0)
		worker(slot);
	return p;
}

/* Reads every slot back through NVME_IOCTL_IO64_CMD and checks it against the journal. */
static void final_check(int nproc, uint64_t *checked, uint64_t *uncertain)
{
	final_phase = 1;
	unsigned char *buf = aligned_alloc(4096, BUFSZ);
	int fd = open(dev_path, O_RDWR);

	slot_id = -1;
	for (int s = 0; s < nproc; s++)
		for (uint32_t u = 0; u < UNITS; u++)
			if (sh->slot[s].u[u].state == U_WRITING)
				sh->slot[s].u[u].state = U_ABANDONED;
	if (fd < 0 || !buf) {
		error("final check: open %s: %s", dev_path, strerror(errno));
		return;
	}
	for (int s = 0; s < nproc; s++) {
		for (uint32_t u0 = 0; u0 < UNITS; u0 += MAXU) {
			struct nvme_passthru_cmd64 c;
			uint64_t off = unit_off(s, u0);
			int ret;

			memset(&c, 0, sizeof(c));
			c.opcode = 0x02;
			c.nsid = nsid;
			c.addr = (uintptr_t)buf;
			c.data_len = BUFSZ;
			c.cdw10 = (uint32_t)(off / lbs);
			c.cdw11 = (uint32_t)((off / lbs) >> 32);
			c.cdw12 = BUFSZ / lbs - 1;
			ret = ioctl(fd, NVME_IOCTL_IO64_CMD, &c);
			if (ret) {
				error("final read of slot %d units %u+%u: %d (errno %d)", s, u0, MAXU,
				      ret, ret < 0 ? errno : 0);
				continue;
			}
			for (uint32_t i = 0; i < MAXU; i++) {
				struct unit *j = &sh->slot[s].u[u0 + i];

				slot_id = s;
				if (check_unit(s, u0 + i, buf + i * UNIT, "final read") == 0) {
					if (j->state == U_ABANDONED)
						(*uncertain)++;
					else if (j->acked)
						(*checked)++;
				}
			}
		}
	}
	close(fd);
	free(buf);
}

/*
 * Self-test of the checks (PREMAP_STRESS_CORRUPT set): zeroes the first acknowledged unit on
 * the device behind the journal's back; the final check must report it.
 */
static void corrupt_one(int nproc)
{
	unsigned char *buf = aligned_alloc(4096, UNIT);
	int fd = open(dev_path, O_RDWR);

	if (fd < 0 || !buf)
		return;
	memset(buf, 0, UNIT);
	for (int s = 0; s < nproc; s++) {
		for (uint32_t u = 0; u < UNITS; u++) {
			struct nvme_passthru_cmd64 c;
			uint64_t off = unit_off(s, u);

			if (sh->slot[s].u[u].state != U_OK || !sh->slot[s].u[u].acked)
				continue;
			memset(&c, 0, sizeof(c));
			c.opcode = 0x01;
			c.nsid = nsid;
			c.addr = (uintptr_t)buf;
			c.data_len = UNIT;
			c.cdw10 = (uint32_t)(off / lbs);
			c.cdw11 = (uint32_t)((off / lbs) >> 32);
			c.cdw12 = UNIT / lbs - 1;
			printf("premap-stress: self-test: zeroing slot %d unit %u: %d\n", s, u,
			       ioctl(fd, NVME_IOCTL_IO64_CMD, &c));
			goto out;
		}
	}
out:
	close(fd);
	free(buf);
}

/* Whether every kind of event the test reports has happened at least once in some slot. */
static int covered(int nproc)
{
	uint64_t k = 0, e = 0, r = 0, o = 0, n = 0, ui = 0, u = 0, cd = 0, cr = 0;

	for (int s = 0; s < nproc; s++) {
		const struct stats *st = &sh->slot[s].st;

		k += st->killed, e += st->exits, r += st->remaps, o += st->old_reg_checks;
		n += st->new_page_checks, ui += st->unreg_inflight, u += st->updates;
		cd += st->close_dev, cr += st->close_ring;
	}
	return k && e && r && o && n && ui && u && cd && cr;
}

int main(int argc, char **argv)
{
	pid_t pids[MAXPROC];
	int nproc, secs, kills = 0, hung = 0, running;
	uint64_t seed, checked = 0, uncertain = 0, next_kill, hard_ms, extended = 0;
	struct stats t;
	int fd;

	if (argc < 6 || argc > 7) {
		fprintf(stderr, "usage: %s DEV LBS SECONDS NPROC BASE_MIB [SEED]\n", argv[0]);
		return 2;
	}
	dev_path = argv[1];
	lbs = (uint32_t)atoi(argv[2]);
	secs = atoi(argv[3]);
	nproc = atoi(argv[4]);
	base = (uint64_t)atoll(argv[5]) << 20;
	seed = argc == 7 ? strtoull(argv[6], NULL, 0) : (uint64_t)time(NULL);
	if (nproc < 1 || nproc > MAXPROC || (lbs != 512 && lbs != 4096) || secs < 1)
		return 2;
	rng_state = mix(seed) | 1;
	fd = open(dev_path, O_RDWR);
	if (fd < 0) {
		perror(dev_path);
		return 1;
	}
	nsid = (uint32_t)ioctl(fd, NVME_IOCTL_ID);
	close(fd);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	sh->deadline_ms = now_ms() + (uint64_t)secs * 1000;
	/* The run lasts SECONDS and, on a kernel too slow for every kind of event to happen in
	 * that time (the debug kernel under TCG), longer until they all have: at most 4x. */
	hard_ms = sh->deadline_ms + (uint64_t)secs * 3000;
	printf("premap-stress: %s nsid %u lbs %u, %d processes x %u KiB at %llu MiB, %d s, seed %llu\n",
	       dev_path, nsid, lbs, nproc, UNITS * UNIT / 1024, (unsigned long long)(base >> 20),
	       secs, (unsigned long long)seed);
	fflush(stdout);
	for (int s = 0; s < nproc; s++)
		pids[s] = spawn(s);
	next_kill = now_ms() + 1000 + rnd_below(2000);
	running = nproc;
	while (running) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);
		uint64_t t_ms = now_ms();

		if (p > 0) {
			int s;

			for (s = 0; s < nproc && pids[s] != p; s++)
				;
			if (s == nproc)
				continue;
			pids[s] = 0;
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
				running--;
				continue;
			}
			if (!(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_DELIBERATE) &&
			    !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
				slot_id = s;
				error("worker exited with status 0x%x", st);
			}
			if (t_ms < sh->deadline_ms)
				pids[s] = spawn(s);
			else
				running--;
			continue;
		}
		if (t_ms + 2500 >= sh->deadline_ms && sh->deadline_ms < hard_ms && !covered(nproc)) {
			__atomic_store_n(&sh->deadline_ms, sh->deadline_ms + 1000, __ATOMIC_RELAXED);
			extended++;
		}
		if (t_ms >= next_kill && t_ms + 2000 < sh->deadline_ms) {
			int s = (int)rnd_below(nproc);

			if (pids[s] > 0 && !kill(pids[s], SIGKILL)) {
				kills++;
				sh->slot[s].st.killed++;
			}
			next_kill = t_ms + 500 + rnd_below(3000);
		}
		if (t_ms > sh->deadline_ms + 120000 && !hung) {
			hung = 1;
			error("workers still running 120 s after the deadline: killing them");
			for (int s = 0; s < nproc; s++)
				if (pids[s] > 0)
					kill(pids[s], SIGKILL);
		}
		usleep(20000);
	}
	/* Rings closed with I/O in flight end in the kernel's workqueue: let them finish. */
	sleep(1);
	if (getenv("PREMAP_STRESS_CORRUPT"))
		corrupt_one(nproc);
	final_check(nproc, &checked, &uncertain);
	memset(&t, 0, sizeof(t));
	for (int s = 0; s < nproc; s++) {
		uint64_t *a = (uint64_t *)&t, *b = (uint64_t *)&sh->slot[s].st;

		for (size_t i = 0; i < sizeof(t) / sizeof(uint64_t); i++)
			a[i] += b[i];
	}
	printf("premap-stress: workers %llu (killed %llu, exited with I/O in flight %llu), "
	       "writes %llu, reads %llu (fixed %llu, plain %llu), units checked by reads %llu\n",
	       (unsigned long long)t.incarnations, (unsigned long long)t.killed,
	       (unsigned long long)t.exits, (unsigned long long)t.writes,
	       (unsigned long long)t.reads, (unsigned long long)t.fixed,
	       (unsigned long long)t.plain, (unsigned long long)t.units_checked);
	printf("premap-stress: registers %llu, unregisters %llu (%llu with I/O in flight), "
	       "updates %llu, remaps at the same address %llu (memfd %llu), old-registration "
	       "checks %llu, new-page checks %llu\n",
	       (unsigned long long)t.registers, (unsigned long long)t.unregisters,
	       (unsigned long long)t.unreg_inflight, (unsigned long long)t.updates,
	       (unsigned long long)t.remaps, (unsigned long long)t.remap_memfd,
	       (unsigned long long)t.old_reg_checks, (unsigned long long)t.new_page_checks);
	printf("premap-stress: device closed with I/O in flight %llu, ring closed with I/O in "
	       "flight %llu, I/Os abandoned %llu, abandoned writes settled by a later read %llu "
	       "(read while landing %llu)\n",
	       (unsigned long long)t.close_dev, (unsigned long long)t.close_ring,
	       (unsigned long long)t.abandoned, (unsigned long long)t.settled,
	       (unsigned long long)t.torn);
	if (extended)
		printf("premap-stress: run extended by %llu s until every kind of event happened%s\n",
		       (unsigned long long)extended, covered(nproc) ? "" : " (not all did)");
	printf("premap-stress: final check: %llu units verified, %llu uncertain (abandoned write "
	       "or the one before), %u errors\n",
	       (unsigned long long)checked, (unsigned long long)uncertain, sh->errors);
	return sh->errors ? 1 : 0;
}
