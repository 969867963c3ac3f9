// SPDX-License-Identifier: GPL-2.0
/*
 * uring-probe CTRL NS NSID LBS: io_uring passthrough commands whose answer is fixed by the
 * C driver's ABI (drivers/nvme/host/ioctl.c in Linux 6.12), on a controller character device
 * CTRL and a namespace character device NS. Prints one line per case, "<case> <result>" (the
 * CQE's res, or the submission's -errno), so that the guest test can run it on rnvme's devices
 * and on the C driver's and compare the two outputs line by line (issue 8: "a bad value gets
 * the errno the C driver returns"):
 *  - ns-admin, ctrl-io: NVME_URING_CMD_ADMIN on a namespace's device and NVME_URING_CMD_IO on
 *    the controller's: -ENOTTY (nvme_ns_uring_cmd(), nvme_dev_uring_cmd());
 *  - *-nocqe32, *-sqe64: rings without 32-byte CQEs or without 128-byte SQEs: -EOPNOTSUPP
 *    (nvme_uring_cmd_checks());
 *  - ctrl-admin-fixed: Identify Controller into a registered buffer (IORING_URING_CMD_FIXED): 0,
 *    and "same" when the bytes equal those of the same Identify into a plain buffer;
 *  - ctrl-admin-fixed-outside, -partial: a fixed admin command whose data lies outside the
 *    registered buffer, or runs past its end: -EFAULT (io_uring_cmd_import_fixed());
 *  - ctrl-admin-fixed-timestamp: Set Features Timestamp with its 8 bytes in the registered
 *    buffer, then Get Features Timestamp into it: 0 0, and "ok" when the value read back lies
 *    within 60 s after the one set (data through the registered pages in both directions);
 *  - ns-io-fixed-outside: a fixed read outside the registered buffer: -EFAULT.
 * Exits 0 iff every case could be submitted (the results themselves are for the comparison).
 * Built statically on the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "raw-uring.h"

#define BUFSZ (8u * 1024)

static int failures;

/* Submits one command on `r` for `fd` and returns the CQE's res (or the -errno of the submit). */
static int run(struct ring *r, int fd, unsigned int op, const struct nvme_uring_cmd *c, int fixed)
{
	struct io_uring_sqe *sqe = uring_get_sqe(r);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe) {
		failures++;
		return -ENOSPC;
	}
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	if (fixed) {
		sqe->uring_cmd_flags = IORING_URING_CMD_FIXED;
		sqe->buf_index = 0;
	}
	/* 16 bytes of payload in a 64-byte SQE: what fits (the driver refuses it anyway). */
	memcpy(sqe->cmd, c, r->sqe_size == 128 ? sizeof(*c) : 16);
	ret = uring_submit(r, 1);
	if (ret < 0)
		return ret;
	cqe = uring_peek_cqe(r);
	if (!cqe) {
		failures++;
		return -EIO;
	}
	ret = cqe->res;
	uring_cqe_seen(r);
	return ret;
}

static struct nvme_uring_cmd identify(void *buf)
{
	struct nvme_uring_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = 0x06; /* Identify */
	c.cdw10 = 1;     /* CNS 1: controller */
	c.addr = (uintptr_t)buf;
	c.data_len = 4096;
	return c;
}

static struct nvme_uring_cmd read_block(uint32_t nsid, void *buf, uint32_t lbs)
{
	struct nvme_uring_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = 0x02; /* Read */
	c.nsid = nsid;
	c.addr = (uintptr_t)buf;
	c.data_len = lbs;
	return c; /* SLBA 0 (cdw10/11), one block (cdw12 = 0) */
}

static struct nvme_uring_cmd timestamp(int set, void *buf)
{
	struct nvme_uring_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = set ? 0x09 : 0x0a; /* Set / Get Features */
	c.cdw10 = 0x0e;               /* Timestamp */
	c.addr = (uintptr_t)buf;
	c.data_len = 8;
	return c;
}

static uint64_t ts48(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 5; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int main(int argc, char **argv)
{
	struct ring big, nocqe32, sqe64;
	struct nvme_uring_cmd c;
	unsigned char *buf, *plain, *other;
	struct iovec iov;
	uint32_t nsid, lbs;
	int ctrl, ns, r1, r2, e;

	if (argc != 5) {
		fprintf(stderr, "usage: uring-probe CTRL NS NSID LBS\n");
		return 2;
	}
	ctrl = open(argv[1], O_RDWR);
	ns = open(argv[2], O_RDWR);
	nsid = (uint32_t)strtoul(argv[3], NULL, 0);
	lbs = (uint32_t)strtoul(argv[4], NULL, 0);
	if (ctrl < 0 || ns < 0 || lbs == 0 || lbs > 4096) {
		perror("uring-probe: open");
		return 2;
	}
	buf = mmap(NULL, BUFSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	plain = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || plain == MAP_FAILED) {
		perror("uring-probe: mmap");
		return 2;
	}
	other = plain + 4096;
	memset(buf, 0, BUFSZ);
	memset(plain, 0, 2 * 4096);
	e = uring_init(&big, 8, IORING_SETUP_SQE128 | IORING_SETUP_CQE32);
	if (!e)
		e = uring_init(&nocqe32, 8, IORING_SETUP_SQE128);
	if (!e)
		e = uring_init(&sqe64, 8, 0);
	if (e) {
		fprintf(stderr, "uring-probe: io_uring_setup: %s\n", strerror(-e));
		return 2;
	}
	iov.iov_base = buf;
	iov.iov_len = BUFSZ;
	if (uring_sys_register(big.fd, IORING_REGISTER_BUFFERS, &iov, 1) < 0) {
		perror("uring-probe: register");
		return 2;
	}

	c = identify(plain);
	printf("ns-admin %d\n", run(&big, ns, NVME_URING_CMD_ADMIN, &c, 0));
	c = read_block(nsid, plain, lbs);
	printf("ctrl-io %d\n", run(&big, ctrl, NVME_URING_CMD_IO, &c, 0));
	printf("ns-io-nocqe32 %d\n", run(&nocqe32, ns, NVME_URING_CMD_IO, &c, 0));
	printf("ns-io-sqe64 %d\n", run(&sqe64, ns, NVME_URING_CMD_IO, &c, 0));
	c = identify(plain);
	printf("ctrl-admin-nocqe32 %d\n", run(&nocqe32, ctrl, NVME_URING_CMD_ADMIN, &c, 0));

	/* The same Identify into a plain buffer and into the registered one. */
	r1 = run(&big, ctrl, NVME_URING_CMD_ADMIN, &c, 0);
	c = identify(buf + 1024);
	r2 = run(&big, ctrl, NVME_URING_CMD_ADMIN, &c, 1);
	printf("ctrl-admin-fixed %d %s\n", r2,
	       r1 == 0 && r2 == 0 && !memcmp(plain, buf + 1024, 4096) ? "same" : "differs");
	c = identify(other);
	printf("ctrl-admin-fixed-outside %d\n", run(&big, ctrl, NVME_URING_CMD_ADMIN, &c, 1));
	c = identify(buf + BUFSZ - 2048);
	printf("ctrl-admin-fixed-partial %d\n", run(&big, ctrl, NVME_URING_CMD_ADMIN, &c, 1));

	/* Set a timestamp from the registered buffer, read it back into it. */
	{
		struct timespec now;
		uint64_t set, got;
		int i;

		clock_gettime(CLOCK_REALTIME, &now);
		set = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
		for (i = 0; i < 8; i++)
			buf[4096 + i] = i < 6 ? (unsigned char)(set >> (8 * i)) : 0;
		c = timestamp(1, buf + 4096);
		r1 = run(&big, ctrl, NVME_URING_CMD_ADMIN, &c, 1);
		memset(buf + 4096, 0, 8);
		c = timestamp(0, buf + 4096);
		r2 = run(&big, ctrl, NVME_URING_CMD_ADMIN, &c, 1);
		got = ts48(buf + 4096);
		printf("ctrl-admin-fixed-timestamp %d %d %s\n", r1, r2,
		       got >= set && got - set < 60000 ? "ok" : "wrong");
	}

	c = read_block(nsid, other, lbs);
	printf("ns-io-fixed-outside %d\n", run(&big, ns, NVME_URING_CMD_IO, &c, 1));

	uring_exit(&sqe64);
	uring_exit(&nocqe32);
	uring_exit(&big);
	close(ns);
	close(ctrl);
	return failures ? 1 : 0;
}
