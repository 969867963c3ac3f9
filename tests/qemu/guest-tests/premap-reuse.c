// SPDX-License-Identifier: GPL-2.0
/*
 * premap-reuse DEV LBS STATS BASE_MIB: one registered buffer registered again and again, and
 * used through several open files of the same namespace character device, with rnvme's premap
 * counters (STATS, /sys/kernel/debug/rnvme/rnvme<C>/premap) read after every step. It proves that
 * rnvme maps a registered buffer's pages once however often they are registered (issue 8: "a
 * buffer registered again is not mapped again"), so no page collects one DMA mapping per
 * registration (the debug kernel's DMA-API debugging warns past eight mappings of a cacheline,
 * "exceeded 7 overlapping mappings", which 53-rnvme-stress.sh once hit).
 *
 * Only this process may do passthrough I/O on the controller meanwhile: the counters are
 * per controller, and every step checks their exact change. Each registration is made in a ring
 * of its own and stays registered, so io_uring's per-registration object (rnvme's cache key)
 * never reuses a freed one's address, and every I/O goes through the ring that registered the
 * buffer's current pages:
 *  1. ring 0 registers 64 KiB at address A, I/O through file 1: one tag made, one live;
 *  2. rings 1-5: new pages at A (mmap MAP_FIXED), registered, I/O through file 1: one tag made
 *     each time, the one cached for A dropped as stale (its pages are another registration's),
 *     one live (until 2026-11-24 every one stayed cached);
 *  3. rings 6-14 register the same pages as ring 5, I/O through file 1: no tag made, the cached
 *     one taken over each time, one live (before, the cache offered at most four candidates of
 *     the same range and the older ones came first, so each of these mapped the pages again:
 *     ten mappings of the same pages, which the debug kernel's DMA-API debugging reports);
 *  4. ring 14's buffer updated with the same pages (IORING_REGISTER_BUFFERS_UPDATE), I/O
 *     through file 1: taken over again;
 *  5. I/O through files 2-9 (the device opened eight more times): no tag made, file 1's shared
 *     by each, one live (before, one tag per file: nine mappings); files 3-9 closed: one live;
 *  6. new pages at A, ring 14's buffer updated with them, I/O through file 2 (one tag made,
 *     file 2's copy of the old one dropped, file 1's still cached: two live), then through
 *     file 1 (file 2's new tag shared, file 1's old one dropped: one live);
 *  7. both files closed: none live.
 * Each I/O step writes 16 KiB with a pattern of its own from the buffer, clears the buffer, reads
 * it back and compares, so the data shows that the I/O used the buffer's current pages.
 *
 * Prints one line per step and per problem ("premap-reuse: error: ..."), then
 * "premap-reuse: N errors"; exits 0 iff there was none. Built statically on the host.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include "raw-uring.h"

#define BUFSZ (64u * 1024)
#define IOSZ (16u * 1024)

static int errors;
static const char *stats_path;
static uint32_t nsid, lbs;
static uint64_t base;
#define NRINGS 15
#define NFILES 9
static struct ring rings[NRINGS];
static unsigned char *buf;

static void error(const char *fmt, ...)
{
	va_list ap;

	printf("premap-reuse: error: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	errors++;
}

/* The counters this test follows, in this order. */
static const char *const names[] = { "tags_created", "tags_live", "tags_stale", "tags_taken_over",
				     "tags_shared" };
#define NCOUNTERS (sizeof(names) / sizeof(names[0]))
enum { CREATED, LIVE, STALE, TAKEN, SHARED };

static void read_counters(long long *v)
{
	char line[128], name[64];
	long long x;
	FILE *f = fopen(stats_path, "r");

	for (size_t i = 0; i < NCOUNTERS; i++)
		v[i] = -1;
	if (!f) {
		error("open %s: %s", stats_path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", name, &x) == 2)
			for (size_t i = 0; i < NCOUNTERS; i++)
				if (!strcmp(name, names[i]))
					v[i] = x;
	fclose(f);
	for (size_t i = 0; i < NCOUNTERS; i++)
		if (v[i] < 0)
			error("counter %s missing from %s", names[i], stats_path);
}

/*
 * Checks the counters' change since `before` (then updates it): `created`, `stale`, `taken`
 * and `shared` are increments, `live` the value now.
 */
static void expect(const char *step, long long *before, long long created, long long live,
		   long long stale, long long taken, long long shared)
{
	long long now[NCOUNTERS], want[NCOUNTERS] = { created, live, stale, taken, shared };

	read_counters(now);
	printf("premap-reuse: %s: created +%lld, live %lld, stale +%lld, taken over +%lld, "
	       "shared +%lld\n", step, now[CREATED] - before[CREATED], now[LIVE],
	       now[STALE] - before[STALE], now[TAKEN] - before[TAKEN],
	       now[SHARED] - before[SHARED]);
	for (size_t i = 0; i < NCOUNTERS; i++) {
		long long got = i == LIVE ? now[i] : now[i] - before[i];

		if (got != want[i]) {
			error("%s: %s %s%lld, expected %s%lld", step, names[i], i == LIVE ? "" : "+",
			      got, i == LIVE ? "" : "+", want[i]);
		}
	}
	memcpy(before, now, sizeof(now));
}

/* Registers the buffer's current pages as buffer 0 of ring `r`. */
static void do_register(struct ring *r)
{
	struct iovec iov = { .iov_base = buf, .iov_len = BUFSZ };

	if (uring_sys_register(r->fd, IORING_REGISTER_BUFFERS, &iov, 1) < 0)
		error("register buffers: %s", strerror(errno));
}

/* Replaces buffer 0 of ring `r` with the buffer's current pages. */
static void do_update(struct ring *r)
{
	struct iovec iov = { .iov_base = buf, .iov_len = BUFSZ };
	struct io_uring_rsrc_update2 up;
	uint64_t tag = 0;

	memset(&up, 0, sizeof(up));
	up.data = (uintptr_t)&iov;
	up.tags = (uintptr_t)&tag;
	up.nr = 1;
	if (uring_sys_register(r->fd, IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up)) != 1)
		error("buffers update: %s", strerror(errno));
}

/* New anonymous pages at the buffer's address (the registration keeps the old ones). */
static void new_pages(void)
{
	void *p = mmap(buf, BUFSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0);

	if (p != buf) {
		error("mmap MAP_FIXED: %s", strerror(errno));
		exit(1);
	}
	memset(buf, 0x5a, BUFSZ);
}

/*
 * One fixed NVMe Write or Read of IOSZ bytes from/to the start of the buffer (ring `r`'s
 * buffer 0) through `fd`.
 */
static int fixed_io(struct ring *r, int fd, int write)
{
	struct io_uring_sqe *sqe = uring_get_sqe(r);
	struct nvme_uring_cmd *c;
	struct io_uring_cqe *cqe;
	int ret, res;

	if (!sqe) {
		error("no free SQE");
		return -1;
	}
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = NVME_URING_CMD_IO;
	sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
	sqe->buf_index = 0;
	c = (struct nvme_uring_cmd *)sqe->cmd;
	c->opcode = write ? 0x01 : 0x02;
	c->nsid = nsid;
	c->addr = (uintptr_t)buf;
	c->data_len = IOSZ;
	c->cdw10 = (uint32_t)(base / lbs);
	c->cdw11 = (uint32_t)((base / lbs) >> 32);
	c->cdw12 = IOSZ / lbs - 1;
	ret = uring_submit(r, 1);
	if (ret < 0) {
		error("io_uring_enter: %s", strerror(-ret));
		return -1;
	}
	cqe = uring_peek_cqe(r);
	if (!cqe) {
		error("no completion");
		return -1;
	}
	res = cqe->res;
	uring_cqe_seen(r);
	if (res != 0)
		error("fixed %s ended with %d", write ? "write" : "read", res);
	return res;
}

/*
 * Writes a pattern of `step` from the buffer, clears it, reads it back and compares (fixed I/O
 * on ring `r`'s registration, through `fd`).
 */
static void io_step(struct ring *r, int fd, unsigned int step)
{
	for (unsigned int i = 0; i < IOSZ; i++)
		buf[i] = (unsigned char)(step * 37 + i * 7 + (i >> 9));
	if (fixed_io(r, fd, 1))
		return;
	memset(buf, 0, IOSZ);
	if (fixed_io(r, fd, 0))
		return;
	for (unsigned int i = 0; i < IOSZ; i++) {
		if (buf[i] != (unsigned char)(step * 37 + i * 7 + (i >> 9))) {
			error("step %u: byte %u read back as %#x", step, i, buf[i]);
			return;
		}
	}
}

int main(int argc, char **argv)
{
	long long c[NCOUNTERS];
	unsigned int step = 0;
	char name[64];
	int fd[NFILES];

	if (argc != 5) {
		fprintf(stderr, "usage: %s DEV LBS STATS BASE_MIB\n", argv[0]);
		return 2;
	}
	lbs = (uint32_t)atoi(argv[2]);
	stats_path = argv[3];
	base = (uint64_t)atoll(argv[4]) << 20;
	if (lbs != 512 && lbs != 4096)
		return 2;
	for (int i = 0; i < NFILES; i++) {
		fd[i] = open(argv[1], O_RDWR);
		if (fd[i] < 0) {
			perror(argv[1]);
			return 1;
		}
	}
	nsid = (uint32_t)ioctl(fd[0], NVME_IOCTL_ID);
	for (int i = 0; i < NRINGS; i++) {
		if (uring_init(&rings[i], 4, IORING_SETUP_SQE128 | IORING_SETUP_CQE32)) {
			error("io_uring_setup failed");
			return 1;
		}
	}
	buf = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return 1;
	memset(buf, 0x5a, BUFSZ);
	read_counters(c);
	if (c[LIVE] != 0)
		error("%lld tags live before the test (another user of the controller?)", c[LIVE]);

	do_register(&rings[0]);
	io_step(&rings[0], fd[0], ++step);
	expect("1 first registration", c, 1, 1, 0, 0, 0);
	for (int i = 1; i <= 5; i++) {
		new_pages();
		do_register(&rings[i]);
		io_step(&rings[i], fd[0], ++step);
		snprintf(name, sizeof(name), "2.%d new pages", i);
		expect(name, c, 1, 1, 1, 0, 0);
	}
	for (int i = 6; i < NRINGS; i++) {
		do_register(&rings[i]);
		io_step(&rings[i], fd[0], ++step);
		snprintf(name, sizeof(name), "3.%d same pages, another ring", i - 5);
		expect(name, c, 0, 1, 0, 1, 0);
	}
	do_update(&rings[NRINGS - 1]);
	io_step(&rings[NRINGS - 1], fd[0], ++step);
	expect("4 update, same pages", c, 0, 1, 0, 1, 0);
	for (int i = 1; i < NFILES; i++) {
		io_step(&rings[NRINGS - 1], fd[i], ++step);
		snprintf(name, sizeof(name), "5.%d another file", i);
		expect(name, c, 0, 1, 0, 0, 1);
	}
	for (int i = 2; i < NFILES; i++)
		close(fd[i]);
	expect("5 files 3-9 closed", c, 0, 1, 0, 0, 0);
	new_pages();
	do_update(&rings[NRINGS - 1]);
	io_step(&rings[NRINGS - 1], fd[1], ++step);
	expect("6a new pages, second file", c, 1, 2, 1, 0, 0);
	io_step(&rings[NRINGS - 1], fd[0], ++step);
	expect("6b first file", c, 0, 1, 1, 0, 1);
	close(fd[0]);
	close(fd[1]);
	expect("7 files closed", c, 0, 0, 0, 0, 0);
	for (int i = 0; i < NRINGS; i++)
		uring_exit(&rings[i]);
	printf("premap-reuse: %d errors\n", errors);
	return errors ? 1 : 0;
}
