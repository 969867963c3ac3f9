// SPDX-License-Identifier: GPL-2.0
/*
 * chardev-fuzz SEED SECONDS MAXCALLS LBS CTRLDEV NSDEV [TRACE]: random NVMe passthrough ioctls
 * and io_uring commands on a controller character device and a namespace character device
 * (rnvme's /dev/rnvme<C> and /dev/rng<C>n<N>, or the C driver's /dev/nvme<C> and
 * /dev/ng<C>n<N>) for issue 10.
 *
 * The first half of the time (and of MAXCALLS) runs as root, the second half in a child that
 * switched to uid/gid 65534 and keeps the files root opened (as a file handed to an
 * unprivileged process: the drivers check permissions per call). Each call is drawn
 * from a xorshift generator seeded with SEED (the child: a seed derived from SEED), and no
 * draw depends on a result, so the same SEED and MAXCALLS give the same calls on any driver:
 * with TRACE, one line per call ("<n> <what> <result>") goes there, to compare two drivers.
 *
 * What is drawn:
 *  - the file: controller or namespace device, opened read-write or read-only;
 *  - ioctls (most often the passthrough ones, NVME_IOCTL_ID, SUBMIT_IO, RESCAN and the vectored
 *    ones; also random numbers of type 'N' and fully random numbers) with a command structure
 *    at a valid place, at the end of a mapping (whole, or crossing into a guard page), or at a
 *    bad address (NULL, unmapped, kernel, non-canonical);
 *  - io_uring commands (IORING_OP_URING_CMD) on rings with 128-byte SQEs and 32-byte CQEs, with
 *    128-byte SQEs only, or with 64-byte SQEs; cmd_op mostly NVME_URING_CMD_IO/ADMIN (also the
 *    vectored ones and random numbers); with and without IORING_URING_CMD_FIXED (registered
 *    buffers, valid and bad buf_index), random uring_cmd_flags, sometimes IOSQE_ASYNC;
 *  - the NVMe command: opcode (known admin and I/O opcodes, vendor-specific, random), flags,
 *    nsid (the namespace's, 0, all-ones, another, random), cdw2/3/10-15, metadata pointer and
 *    length, data pointer (as above, plus read-only pages, misaligned, the end of a buffer next
 *    to a guard page) and length (0, odd, page multiples up to 2 MiB, huge), timeout (0, 1-60 s,
 *    all-ones).
 *
 * Left out, for root only (a root user can equally break the C driver with them, and they test
 * the controller's recovery rather than the driver's handling of hostile input):
 *  - admin opcodes that change the controller's own state under the driver: Delete/Create I/O
 *    SQ/CQ (0x00, 0x01, 0x04, 0x05), Abort (0x08: can abort the driver's own commands), Async
 *    Event Request (0x0c: the controller keeps it until an event, the caller waits for the
 *    admin timeout), Namespace Management/Attachment (0x0d, 0x15), Firmware Commit/Image
 *    Download (0x10, 0x11), Virtualization Management (0x1c), Doorbell Buffer Config (0x7c: the
 *    controller would take doorbells from a user page), Format NVM (0x80), Sanitize (0x84);
 *  - NVME_IOCTL_RESET and NVME_IOCTL_SUBSYS_RESET (a controller reset on purpose; rnvme does not
 *    support them, the C driver resets), and the filesystem freeze ioctls among random numbers.
 * Unprivileged, every opcode and ioctl is drawn (they must be refused).
 *
 * DMA rule (both uids): the controller is told to move at most data_len bytes. Neither driver
 * checks the command's own length fields against data_len (drivers/nvme/host/ioctl.c does not),
 * and a controller that moves more than the buffer's pages follows PRP2 as a list pointer into
 * the user's own data: without an IOMMU, DMA anywhere in guest memory. So NLB of Read/Write/
 * Compare, the range counts of Dataset Management and Copy and the dword counts of Get Log
 * Page, Directive Send/Receive, Reservation Report, I/O Management Receive and Zone Management
 * Receive are cut to data_len (QEMU's other commands move at most 4 KiB, which two PRP
 * entries always cover).
 *
 * Pin-failure rule (both uids): a data buffer in user space that cannot be pinned whole (not
 * inside the arena) spans at most 8 pages (UIO_FASTIOV), vectored ones included. In 6.12
 * block/blk-map.c bio_map_user_iov() leaks the page array iov_iter_extract_pages() allocated
 * (buffers of more than 8 pages) when pinning then fails: kmemleak reports it on the debug
 * kernel for both drivers (found by this program: 42 objects in one run, 8 of them through the
 * C driver's nvme_map_user_request()). CHARDEV_FUZZ_PIN_FAILURES=1 in the environment lifts the
 * rule (to show that kernel leak).
 *
 * Timeouts below 1 s are not drawn: under TCG they expire on healthy commands and turn the run
 * into a (nondeterministic) controller reset test.
 *
 * Prints "chardev-fuzz: <n> calls, <m> distinct errnos, seed <s>" (and per uid lines); exits 0
 * when every call returned. A watchdog process kills a call that has not returned in 120 s
 * and names it (the guest kernel has no POSIX timers: no alarm()).
 * Built statically on the host (see raw-uring.h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>

#include "raw-uring.h"

#define ARENA (8u << 20)	/* data buffers: 8 MiB between guard pages */
#define NREG 4			/* registered buffers per ring */
#define REGSZ (256u << 10)	/* each 256 KiB; the last one ends at the upper guard page */
#define CALL_TIMEOUT_S 120
#define FIFREEZE_NR 0xc0045877u
#define FITHAW_NR 0xc0045878u

static uint64_t rs;
static int privileged;
static uint32_t lbs, ns_nsid;
static unsigned char *arena, *hole, *ro;
static struct ring rings[3];
static int fds[4];		/* ctrl rw, ctrl ro, ns rw, ns ro (-1: could not open) */
static FILE *trace;
static unsigned long ncalls;
static char what[96];

/* Results seen (ioctl return values, -errno, CQE res), for the distinct-errno count. */
static int64_t seen[512];
static unsigned long seen_n[512];
static int nseen;

static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545f4914f6cdd1dull;
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The watchdog: a process that kills a fuzzing process whose call has not returned in
 * CALL_TIMEOUT_S and says which call it was (the guest kernel has no POSIX timers: no alarm()).
 */
struct beat {
	uint64_t ms;		/* when the current call started, 0: none */
	unsigned long call;
	pid_t pid;
	int done;
	char what[96];
};

static struct beat *beat;

static void beat_start(void)
{
	memcpy(beat->what, what, sizeof(what));
	beat->call = ncalls;
	beat->pid = getpid();
	__atomic_store_n(&beat->ms, now_ms(), __ATOMIC_RELEASE);
}

static pid_t start_watchdog(void)
{
	pid_t p = fork();

	if (p)
		return p;
	while (!__atomic_load_n(&beat->done, __ATOMIC_ACQUIRE)) {
		uint64_t t = __atomic_load_n(&beat->ms, __ATOMIC_ACQUIRE);

		if (t && now_ms() > t + CALL_TIMEOUT_S * 1000ull &&
		    __atomic_load_n(&beat->ms, __ATOMIC_ACQUIRE) == t) {
			dprintf(1, "chardev-fuzz: FAIL call %lu (%s, pid %d) did not return in %d s\n",
				beat->call, beat->what, beat->pid, CALL_TIMEOUT_S);
			kill(beat->pid, SIGKILL);
			_exit(3);
		}
		usleep(200000);
	}
	_exit(0);
}

static void record(int64_t r)
{
	int i;

	for (i = 0; i < nseen && seen[i] != r; i++)
		;
	if (i == nseen && nseen < 512)
		seen[nseen++] = r;
	if (i < 512)
		seen_n[i]++;
	if (trace)
		fprintf(trace, "%lu %d %s %lld\n", ncalls, privileged, what, (long long)r);
}

/* ---- value generators ---------------------------------------------------------------------- */

/* A data address for `len` bytes. */
static uint64_t gen_ptr(uint32_t len)
{
	uint64_t end = (uintptr_t)arena + ARENA;
	uint32_t l = len > ARENA ? ARENA : len;

	switch (below(24)) {
	case 0: return 0;
	case 1: return 16;
	case 2: return (uintptr_t)hole + below(8192);
	case 3: return 0xffff888000000000ull + ((rnd() & 0xfffffff) << 12);
	case 4: return 0xffffffff81000000ull + below(1 << 20);
	case 5: return rnd();
	case 6: return 0x8000000000000000ull;
	case 7: return (uintptr_t)ro + below(4) * 1024;
	case 8: return end - l;				/* ends at the guard page */
	case 9: return end - l + 1 + below(64);		/* crosses into it */
	case 10: return (uintptr_t)arena + below(ARENA / 2) * 2 + 1;	/* odd */
	case 11: return (uintptr_t)arena + below(ARENA / 4) * 4;	/* dword aligned */
	default: return (uintptr_t)arena + (uint64_t)below(ARENA / 4096 - 1) * 4096;
	}
}

static int pin_failures;	/* CHARDEV_FUZZ_PIN_FAILURES: no pin-failure rule */

static int in_arena(uint64_t a, uint64_t len)
{
	uint64_t end = (uintptr_t)arena + ARENA;

	return a >= (uintptr_t)arena && a <= end && len <= end - a;
}

/* Whether `a` is a user address the kernel would try to pin (access_ok() passes). */
static int user_addr(uint64_t a)
{
	return a < 0x7ffffffff000ull;
}

/* The pin-failure rule (see the header) for a buffer at `a` of `*len` bytes. */
static void pin_rule(uint64_t a, uint32_t *len)
{
	uint64_t pages = ((a & 4095) + (uint64_t)*len + 4095) / 4096;

	if (pin_failures || !user_addr(a) || in_arena(a, *len) || pages <= 8)
		return;
	*len = 8 * 4096 - (uint32_t)(a & 4095);
}

static uint32_t gen_len(void)
{
	switch (below(16)) {
	case 0: case 1: return 0;
	case 2: return 1 + below(16);
	case 3: return 0xffffffffu;
	case 4: return 0x80000000u;
	case 5: return 1u << 30;
	case 6: return (uint32_t)rnd();
	case 7: return 4096 * (1 + below(512));
	case 8: case 9: return 512 * (1 + below(64));
	default: return 4096 * (1 + below(16));
	}
}

static uint32_t gen_nsid(void)
{
	switch (below(10)) {
	case 0: return 0;
	case 1: return 0xffffffffu;
	case 2: return ns_nsid + 1;
	case 3: return (uint32_t)rnd();
	default: return ns_nsid;
	}
}

static const uint8_t admin_ops[] = {
	0x02, 0x06, 0x06, 0x06, 0x09, 0x0a, 0x0a, 0x14, 0x18, 0x19, 0x1a, 0x1d, 0x1e, 0x20,
	0x24, 0x7f, 0x81, 0x82, 0x86, 0xc0, 0xc1, 0xff,
	/* root never gets these (see the header); unprivileged callers do */
	0x00, 0x01, 0x04, 0x05, 0x08, 0x0c, 0x0d, 0x10, 0x11, 0x15, 0x1c, 0x7c, 0x80, 0x84,
};
#define ADMIN_SAFE 22

static int admin_excluded(uint8_t op)
{
	for (unsigned int i = ADMIN_SAFE; i < sizeof(admin_ops); i++)
		if (admin_ops[i] == op)
			return 1;
	return 0;
}

static const uint8_t io_ops[] = {
	0x00, 0x01, 0x01, 0x02, 0x02, 0x02, 0x04, 0x05, 0x08, 0x09, 0x0c, 0x0d, 0x0e, 0x11,
	0x12, 0x15, 0x19, 0x1d, 0x79, 0x7a, 0x7d, 0x80, 0x81, 0x82, 0xff,
};

/* Cuts the command's own length fields to data_len (the DMA rule in the header). */
static void dma_rule(int admin, struct nvme_passthru_cmd64 *c)
{
	uint32_t len = c->addr ? c->data_len : 0;
	uint32_t dw = len / 4;	/* dwords the buffer holds */
	uint32_t numd = dw ? dw - 1 : 0;

	if (admin) {
		switch (c->opcode) {
		case 0x02:	/* Get Log Page: NUMDL cdw10[31:16], NUMDU cdw11[15:0] */
			if (((c->cdw10 >> 16) | ((uint64_t)(c->cdw11 & 0xffff) << 16)) > numd) {
				c->cdw10 = (c->cdw10 & 0xffff) | ((numd & 0xffff) << 16);
				c->cdw11 = (c->cdw11 & 0xffff0000u) | (numd >> 16);
			}
			break;
		case 0x19: case 0x1a:	/* Directive Send/Receive: NUMD cdw10 */
			if (c->cdw10 > numd)
				c->cdw10 = numd;
			break;
		}
		return;
	}
	switch (c->opcode) {
	case 0x01: case 0x02: case 0x05: {	/* Read/Write/Compare: NLB cdw12[15:0] */
		uint32_t blocks = len / lbs;

		if ((c->cdw12 & 0xffff) + 1 > blocks)
			c->cdw12 = (c->cdw12 & 0xffff0000u) | (blocks ? blocks - 1 : 0);
		break;
	}
	case 0x09:	/* DSM: NR cdw10[7:0], 16 bytes a range */
		if ((c->cdw10 & 0xff) + 1 > len / 16)
			c->cdw10 = (c->cdw10 & ~0xffu) | (len / 16 ? len / 16 - 1 : 0);
		break;
	case 0x19:	/* Copy: NR cdw12[7:0], up to 40 bytes a range */
		if ((c->cdw12 & 0xff) + 1 > len / 40)
			c->cdw12 = (c->cdw12 & ~0xffu) | (len / 40 ? len / 40 - 1 : 0);
		break;
	case 0x0e:	/* Reservation Report: NUMD cdw10 */
		if (c->cdw10 > numd)
			c->cdw10 = numd;
		break;
	case 0x12: case 0x7a:	/* I/O / Zone Management Receive: NUMD cdw11 / cdw12 */
		if (c->cdw11 > numd)
			c->cdw11 = numd;
		if (c->cdw12 > numd)
			c->cdw12 = numd;
		break;
	}
}

/* A random NVMe command (admin or I/O), as the 64-bit passthrough structure. */
static void gen_cmd(int admin, struct nvme_passthru_cmd64 *c)
{
	memset(c, 0, sizeof(*c));
	if (below(12) == 0) {
		c->opcode = (uint8_t)rnd();
	} else if (admin) {
		uint32_t n = privileged ? ADMIN_SAFE : sizeof(admin_ops);

		c->opcode = admin_ops[below(n)];
	} else {
		c->opcode = io_ops[below(sizeof(io_ops))];
	}
	if (admin && privileged && admin_excluded(c->opcode))
		c->opcode = 0x06;
	c->flags = below(8) == 0 ? (uint8_t)rnd() : 0;
	c->nsid = admin ? (below(2) ? 0 : gen_nsid()) : gen_nsid();
	if (below(8) == 0) {
		c->cdw2 = (uint32_t)rnd();
		c->cdw3 = (uint32_t)rnd();
	}
	if (below(10) == 0) {
		c->metadata_len = gen_len();
		c->metadata = gen_ptr(c->metadata_len);
	}
	c->data_len = gen_len();
	c->addr = gen_ptr(c->data_len);
	pin_rule(c->addr, &c->data_len);
	if (below(6) == 0)
		c->data_len = 0;
	c->cdw10 = (uint32_t)rnd();
	c->cdw11 = below(4) ? 0 : (uint32_t)rnd();
	c->cdw12 = (uint32_t)rnd();
	c->cdw13 = below(4) ? 0 : (uint32_t)rnd();
	c->cdw14 = below(4) ? 0 : (uint32_t)rnd();
	c->cdw15 = below(4) ? 0 : (uint32_t)rnd();
	if (!admin && c->opcode <= 0x05 && below(4)) {
		/* A plausible LBA range of a 256 MiB namespace (else anywhere). */
		c->cdw10 = below((256u << 20) / lbs);
		c->cdw11 = 0;
		c->cdw12 &= below(2) ? 0xffu : 0xffffu;
	}
	if (admin && c->opcode == 0x06 && below(2))
		c->cdw10 = below(4);	/* CNS 0-3 */
	switch (below(10)) {
	case 0: case 1: c->timeout_ms = 1000 + below(59000); break;
	case 2: c->timeout_ms = 0xffffffffu; break;
	default: c->timeout_ms = 0;
	}
	dma_rule(admin, c);
}

/* Where a command structure of `size` bytes goes (copied there when valid). */
static void *place(const void *cmd, size_t size)
{
	unsigned char *end = arena + ARENA;
	unsigned char *p;

	switch (below(20)) {
	case 0: return NULL;
	case 1: return (void *)(uintptr_t)(0xffff888000000000ull + ((rnd() & 0xffff) << 12));
	case 2: return hole + below(4096);
	case 3: return (void *)(uintptr_t)rnd();
	case 4:		/* crosses into the guard page: the copy faults */
		p = end - size + 1 + below((uint32_t)size - 1);
		memcpy(p, cmd, end - p);
		return p;
	case 5: p = end - size; break;		/* ends at the guard page */
	case 6: p = ro; return p;		/* readable, not writable: result write-back fails */
	default: p = arena + below(ARENA / 8 - 64) * 8; break;
	}
	memcpy(p, cmd, size);
	return p;
}

/* ---- calls --------------------------------------------------------------------------------- */

/*
 * A vectored command's data: an iovec array (0-8 entries, the rest of its page zeroed) with
 * the same kinds of pointers and lengths, or a bad array address; data_len counts iovecs.
 */
static void gen_vec(int admin, struct nvme_passthru_cmd64 *c)
{
	static const uint64_t bad[3] = { 0, 16, 0xffff888000000000ull };
	struct iovec *v = (struct iovec *)(arena + ARENA - 4096);
	uint32_t n = below(9), len;
	uint64_t total = 0, base;
	int pin_fails = 0;

	memset(v, 0, 4096);
	for (uint32_t i = 0; i < n; i++) {
		len = below(3) ? 4096 : below(9000);
		base = gen_ptr(len);
		pin_fails |= user_addr(base) && !in_arena(base, len);
		v[i].iov_base = (void *)(uintptr_t)base;
		v[i].iov_len = len;
	}
	for (uint32_t i = 0; i < n && pin_fails && !pin_failures; i++) {
		/* the pin-failure rule: each entry within one page, at most 8 pages in all */
		uint64_t room = 4096 - ((uintptr_t)v[i].iov_base & 4095);

		if (v[i].iov_len > room)
			v[i].iov_len = room;
	}
	for (uint32_t i = 0; i < n; i++)
		total += v[i].iov_len;
	/* the DMA rule on the bytes the iovecs hold */
	c->addr = (uintptr_t)v;
	c->data_len = (uint32_t)total;
	dma_rule(admin, c);
	c->data_len = below(3) ? n : (uint32_t)rnd();
	if (below(6) == 0)
		c->addr = bad[below(3)];
}

static int pick_fd(int *is_ns)
{
	int i = below(4);

	*is_ns = i >= 2;
	return fds[i];
}

static void do_ioctl(void)
{
	static const unsigned long nrs[] = {
		NVME_IOCTL_ADMIN_CMD, NVME_IOCTL_ADMIN64_CMD, NVME_IOCTL_IO_CMD,
		NVME_IOCTL_IO64_CMD, NVME_IOCTL_ID, NVME_IOCTL_SUBMIT_IO, NVME_IOCTL_RESCAN,
		NVME_IOCTL_IO64_CMD_VEC, NVME_IOCTL_RESET, NVME_IOCTL_SUBSYS_RESET,
	};
	struct nvme_passthru_cmd64 c;
	unsigned long nr;
	void *arg;
	int is_ns, fd = pick_fd(&is_ns);
	uint32_t k = below(100);
	long r;

	if (k < 88) {
		nr = nrs[k < 80 ? below(4) : below(sizeof(nrs) / sizeof(nrs[0]))];
	} else if (k < 96) {
		nr = _IOC(below(4), 'N', below(256), below(256));
	} else {
		nr = (uint32_t)rnd();
	}
	if (privileged && (nr == NVME_IOCTL_RESET || nr == NVME_IOCTL_SUBSYS_RESET ||
			   nr == FIFREEZE_NR || nr == FITHAW_NR))
		nr = NVME_IOCTL_ID;
	gen_cmd(nr == NVME_IOCTL_ADMIN_CMD || nr == NVME_IOCTL_ADMIN64_CMD, &c);
	if (nr == NVME_IOCTL_IO64_CMD_VEC)
		gen_vec(0, &c);
	arg = place(&c, sizeof(c));
	snprintf(what, sizeof(what), "ioctl:%s:%lx:op%02x:fd%d", is_ns ? "ns" : "ctrl", nr,
		 c.opcode, fd == fds[0] || fd == fds[2] ? 2 : 0);
	if (fd < 0) {
		record(-EBADF);
		return;
	}
	beat_start();
	r = ioctl(fd, nr, arg);
	record(r < 0 ? -errno : r);
}

static void do_uring(void)
{
	static const uint32_t ops[] = {
		NVME_URING_CMD_IO, NVME_URING_CMD_IO, NVME_URING_CMD_IO, NVME_URING_CMD_ADMIN,
		NVME_URING_CMD_ADMIN, NVME_URING_CMD_IO_VEC, NVME_URING_CMD_ADMIN_VEC,
	};
	uint32_t k = below(100), op;
	struct ring *r = &rings[k < 70 ? 0 : k < 85 ? 1 : 2];
	struct nvme_passthru_cmd64 c;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int is_ns, fd = pick_fd(&is_ns), ret, fixed = 0, bi = 0;

	k = below(100);
	op = k < 80 ? ops[below(7)] : k < 90 ? (uint32_t)_IOC(below(4), 'N', below(256), below(256))
					    : (uint32_t)rnd();
	gen_cmd(op == NVME_URING_CMD_ADMIN || op == NVME_URING_CMD_ADMIN_VEC, &c);
	if (op == NVME_URING_CMD_IO_VEC || op == NVME_URING_CMD_ADMIN_VEC)
		gen_vec(op == NVME_URING_CMD_ADMIN_VEC, &c);
	k = below(100);
	if (k < 45) {
		fixed = IORING_URING_CMD_FIXED;
		k = below(10);
		bi = k < 8 ? (int)below(NREG) : k == 8 ? NREG : (int)(uint16_t)rnd();
		if (bi < NREG && below(10) < 7 && op != NVME_URING_CMD_IO_VEC &&
		    op != NVME_URING_CMD_ADMIN_VEC) {
			/* inside the registered buffer (its end is the upper guard page for the last) */
			unsigned char *b = arena + ARENA - (NREG - bi) * REGSZ;
			uint32_t off = below(REGSZ / 512) * 512;

			c.addr = (uintptr_t)b + off;
			if (c.data_len > REGSZ - off && below(4))
				c.data_len = REGSZ - off;
			dma_rule(op == NVME_URING_CMD_ADMIN, &c);
		}
	} else if (k < 50) {
		fixed = (uint32_t)rnd() & 0xff;
		bi = (uint16_t)rnd();
	}
	snprintf(what, sizeof(what), "uring%d:%s:%x:op%02x:f%x:b%d", (int)(r - rings),
		 is_ns ? "ns" : "ctrl", op, c.opcode, fixed, bi);
	if (r->fd < 0) {
		record(-ENXIO);
		return;
	}
	sqe = uring_get_sqe(r);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->uring_cmd_flags = fixed;
	sqe->buf_index = (uint16_t)bi;
	sqe->user_data = ncalls;
	if (below(5) == 0)
		sqe->flags = IOSQE_ASYNC;
	if (r->sqe_size == 128) {
		memcpy(sqe->cmd, &c, sizeof(struct nvme_uring_cmd));
	} else {
		/* 64-byte SQE: only 16 bytes of command fit; the driver must not read on */
		memcpy(sqe->cmd, &c, 16);
	}
	beat_start();
	ret = uring_submit(r, 1);
	if (ret < 0) {
		record(ret);
		return;
	}
	/* This call's CQE (a refused io_uring_enter may leave an SQE that a later one submits:
	 * every CQE there is consumed here). */
	ret = -ENODATA;
	while ((cqe = uring_peek_cqe(r))) {
		if (cqe->user_data == ncalls)
			ret = cqe->res;
		uring_cqe_seen(r);
	}
	record(ret);
}

static void setup_rings(void)
{
	static const unsigned int flags[3] = {
		IORING_SETUP_SQE128 | IORING_SETUP_CQE32, IORING_SETUP_SQE128, 0,
	};

	for (int i = 0; i < 3; i++) {
		struct iovec iov[NREG];

		if (uring_init(&rings[i], 4, flags[i])) {
			fprintf(stderr, "chardev-fuzz: io_uring_setup(flags %x) failed\n", flags[i]);
			rings[i].fd = -1;
			continue;
		}
		for (int b = 0; b < NREG; b++) {
			iov[b].iov_base = arena + ARENA - (NREG - b) * REGSZ;
			iov[b].iov_len = REGSZ;
		}
		if (uring_sys_register(rings[i].fd, IORING_REGISTER_BUFFERS, iov, NREG) < 0)
			fprintf(stderr, "chardev-fuzz: register buffers: %s\n", strerror(errno));
	}
}

static void open_devs(const char *ctrl, const char *ns)
{
	static const int modes[4] = { O_RDWR, O_RDONLY, O_RDWR, O_RDONLY };

	for (int i = 0; i < 4; i++) {
		fds[i] = open(i < 2 ? ctrl : ns, modes[i]);
		if (fds[i] < 0)
			printf("chardev-fuzz: uid %d: open %s %s: %s\n", getuid(), i < 2 ? ctrl : ns,
			       modes[i] == O_RDWR ? "read-write" : "read-only", strerror(errno));
	}
}

/* Runs calls until the deadline or `max` calls; returns the number made. */
static unsigned long run(uint64_t deadline, unsigned long max)
{
	unsigned long n = 0;

	for (; n < max && now_ms() < deadline; n++, ncalls++) {
		if (below(100) < 60)
			do_ioctl();
		else
			do_uring();
	}
	return n;
}

static int distinct_errnos(void)
{
	int m = 0;

	for (int i = 0; i < nseen; i++)
		m += seen[i] < 0;
	return m;
}

static void summary(const char *who, unsigned long n)
{
	printf("chardev-fuzz: %s: %lu calls, %d distinct errnos; results:", who, n,
	       distinct_errnos());
	for (int i = 0; i < nseen && i < 40; i++)
		printf(" %lld:%lu", (long long)seen[i], seen_n[i]);
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	uint64_t seed, t0, half;
	unsigned long max, n_root;
	pid_t wd;
	int st, wst, pipefd[2], m_child = 0;
	unsigned long n_child = 0;
	pid_t pid;

	if (argc < 7 || argc > 8) {
		fprintf(stderr, "usage: %s SEED SECONDS MAXCALLS LBS CTRLDEV NSDEV [TRACE]\n", argv[0]);
		return 2;
	}
	seed = strtoull(argv[1], NULL, 0);
	pin_failures = getenv("CHARDEV_FUZZ_PIN_FAILURES") != NULL;
	t0 = now_ms();
	half = (uint64_t)atoi(argv[2]) * 500;
	max = strtoul(argv[3], NULL, 0);
	lbs = (uint32_t)atoi(argv[4]);
	if (argc == 8 && !(trace = fopen(argv[7], "w"))) {
		perror(argv[7]);
		return 2;
	}
	beat = mmap(NULL, sizeof(*beat), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (beat == MAP_FAILED)
		return 1;
	memset(beat, 0, sizeof(*beat));
	wd = start_watchdog();
	/* arena between guard pages; a hole that is never mapped; a read-only page */
	hole = mmap(NULL, ARENA + 4 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (hole == MAP_FAILED || ro == MAP_FAILED)
		return 1;
	arena = hole + 2 * 4096;
	{
		/* the read-only page holds an Identify Controller command (place() case 6) */
		struct nvme_passthru_cmd64 *id = (struct nvme_passthru_cmd64 *)ro;

		if (mprotect(ro, 4096, PROT_READ | PROT_WRITE))
			return 1;
		id->opcode = 0x06;
		id->cdw10 = 1;
		id->addr = (uintptr_t)hole + 2 * 4096;
		id->data_len = 4096;
		if (mprotect(ro, 4096, PROT_READ))
			return 1;
	}
	if (mprotect(arena, ARENA, PROT_READ | PROT_WRITE))
		return 1;
	memset(arena, 0x5a, ARENA);
	open_devs(argv[5], argv[6]);
	if (fds[0] < 0 || fds[2] < 0) {
		fprintf(stderr, "chardev-fuzz: cannot open %s / %s: %s\n", argv[5], argv[6],
			strerror(errno));
		return 1;
	}
	ns_nsid = (uint32_t)ioctl(fds[2], NVME_IOCTL_ID);
	setup_rings();
	printf("chardev-fuzz: seed %llu, %s s, at most %lu calls, %s %s (nsid %u)\n",
	       (unsigned long long)seed, argv[2], max, argv[5], argv[6], ns_nsid);
	fflush(stdout);

	privileged = 1;
	rs = seed * 0x9e3779b97f4a7c15ull + 1;
	n_root = run(t0 + half, max / 2);
	summary("root", n_root);
	if (trace)
		fflush(trace);

	if (pipe(pipefd))
		return 1;
	pid = fork();
	if (pid == 0) {
		unsigned long n;
		int m;

		close(pipefd[0]);
		if (setgid(65534) || setuid(65534)) {
			perror("setuid");
			_exit(1);
		}
		privileged = 0;
		nseen = 0;
		/* The files root opened stay (permissions are checked per call, as in the C
		 * driver); new rings, registered by the unprivileged user. */
		for (int i = 0; i < 3; i++)
			uring_exit(&rings[i]);
		setup_rings();
		rs = (seed ^ 0x6a09e667f3bcc909ull) * 0x9e3779b97f4a7c15ull + 1;
		n = run(now_ms() + half, max - max / 2);
		summary("uid 65534", n);
		m = nseen;
		if (trace)
			fclose(trace);
		if (write(pipefd[1], &n, sizeof(n)) != sizeof(n) ||
		    write(pipefd[1], &m, sizeof(m)) != sizeof(m) ||
		    write(pipefd[1], seen, m * sizeof(seen[0])) != (ssize_t)(m * sizeof(seen[0])))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	if (trace) {
		fclose(trace);
		trace = NULL;
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	if (read(pipefd[0], &n_child, sizeof(n_child)) != sizeof(n_child) ||
	    read(pipefd[0], &m_child, sizeof(m_child)) != sizeof(m_child) || m_child > 512) {
		fprintf(stderr, "chardev-fuzz: the unprivileged child failed (status 0x%x)\n", st);
		return 1;
	}
	for (int i = 0; i < m_child; i++) {
		int64_t v;

		if (read(pipefd[0], &v, sizeof(v)) != sizeof(v))
			return 1;
		ncalls = 0;
		privileged = 2;
		record(v);	/* merges (no trace: closed) */
	}
	printf("chardev-fuzz: %lu calls, %d distinct errnos, seed %llu\n", n_root + n_child,
	       distinct_errnos(), (unsigned long long)seed);
	__atomic_store_n(&beat->done, 1, __ATOMIC_RELEASE);
	if (waitpid(wd, &wst, 0) != wd || !WIFEXITED(wst) || WEXITSTATUS(wst))
		return 1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
