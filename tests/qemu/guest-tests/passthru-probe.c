// SPDX-License-Identifier: GPL-2.0
/*
 * passthru-probe DEV|fd:N NSID: hostile NVMe passthrough calls on a namespace character device
 * (used by 50-rnvme-passthru.sh on rnvme's and the C driver's devices). Prints one line per
 * case, "<case> <result>", where result is the ioctl's return value or -errno, so the test can
 * compare the two drivers line by line. Built statically on the host (no libc headers in the
 * guest), against the uapi header of the host (same ABI).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int fd;

static void report(const char *name, long ret)
{
	printf("%s %ld\n", name, ret < 0 ? -(long)errno : ret);
}

/* An I/O command with data at `addr` and NLB (0-based) `nlb` at LBA `slba`. */
static long io64_lba(uint8_t opcode, uint32_t nsid, uint64_t slba, uint64_t addr, uint32_t len,
		     uint32_t nlb)
{
	struct nvme_passthru_cmd64 c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.nsid = nsid;
	c.addr = addr;
	c.data_len = len;
	c.cdw10 = (uint32_t)slba;
	c.cdw11 = (uint32_t)(slba >> 32);
	c.cdw12 = nlb;
	return ioctl(fd, NVME_IOCTL_IO64_CMD, &c);
}

static long io64(uint8_t opcode, uint32_t nsid, uint64_t addr, uint32_t len, uint32_t nlb)
{
	return io64_lba(opcode, nsid, 0, addr, len, nlb);
}

/* A Read (2) or Write (1) of `len` bytes at namespace byte `at`, in 512-byte blocks. */
static long io64_at(uint8_t opcode, uint32_t nsid, uint64_t at, uint64_t addr, uint32_t len)
{
	return io64_lba(opcode, nsid, at / 512, addr, len, len / 512 - 1);
}

static long admin(uint8_t opcode, uint32_t cdw10, uint64_t addr, uint32_t len)
{
	struct nvme_passthru_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.cdw10 = cdw10;
	c.addr = addr;
	c.data_len = len;
	return ioctl(fd, NVME_IOCTL_ADMIN_CMD, &c);
}

int main(int argc, char **argv)
{
	uint32_t nsid;
	char *buf, *ro;

	if (argc != 3)
		return 2;
	/* "fd:N": an already open descriptor (the device may be gone): ID and Identify only. */
	if (!strncmp(argv[1], "fd:", 3)) {
		char id[4096];

		fd = atoi(argv[1] + 3);
		report("held-id", ioctl(fd, NVME_IOCTL_ID));
		report("held-identify", admin(6, 1, (uintptr_t)id, sizeof(id)));
		return 0;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	nsid = (uint32_t)strtoul(argv[2], NULL, 0);
	buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || ro == MAP_FAILED)
		return 1;
	memset(buf, 0x5a, 1 << 20);

	report("id", ioctl(fd, NVME_IOCTL_ID));
	report("cmd-struct-null", ioctl(fd, NVME_IOCTL_IO64_CMD, NULL));
	report("cmd-struct-kernel", ioctl(fd, NVME_IOCTL_IO64_CMD, (void *)0xffff888000000000ul));
	report("admin-struct-bad", ioctl(fd, NVME_IOCTL_ADMIN_CMD, (void *)16));
	report("read-to-bad-ptr", io64(2, nsid, 16, 4096, 7));
	report("read-to-kernel-ptr", io64(2, nsid, 0xffff888000000000ul, 4096, 7));
	report("read-to-readonly", io64(2, nsid, (uintptr_t)ro, 4096, 7));
	report("write-from-readonly", io64(1, nsid, (uintptr_t)ro, 4096, 7));
	report("read-unmapped-tail", io64(2, nsid, (uintptr_t)buf + (1 << 20) - 2048, 4096, 7));
	report("zero-length-with-ptr", io64(2, nsid, (uintptr_t)buf, 0, 0));
	report("huge-length", io64(2, nsid, (uintptr_t)buf, 0xfffff000u, 7));
	report("length-past-buffer", io64(2, nsid, (uintptr_t)buf, 2 << 20, 4095));
	report("wrong-nsid", io64(2, nsid + 1, (uintptr_t)buf, 4096, 7));
	report("nsid-all", io64(2, 0xffffffffu, (uintptr_t)buf, 4096, 7));
	report("unknown-ioctl", ioctl(fd, _IO('N', 0x7f)));
	report("identify-bad-ptr", admin(6, 1, 16, 4096));
	report("identify-ok", admin(6, 1, (uintptr_t)buf, 4096));
	/*
	 * More data than the controller's transfer limit (QEMU's default MDTS: 512 KiB) but less
	 * than the largest any controller allows: refused by the admin queue's limit, and at an
	 * unmapped address by the pinning that comes first in the C driver.
	 */
	report("admin-over-mdts", admin(6, 1, (uintptr_t)buf, 768u << 10));
	report("admin-over-mdts-bad-ptr", admin(6, 1, 16, 768u << 10));
	report("read-ok", io64(2, nsid, (uintptr_t)buf, 4096, 7));
	/*
	 * 8 KiB from an odd address, over three pages: not aligned for the queue
	 * (dma_alignment), so the block layer copies it through an aligned bounce buffer for both
	 * drivers (blk_rq_map_user_iov()); written, read back into that address and into an aligned
	 * buffer, and the bytes must come back.
	 */
	{
		char *odd = buf + (256u << 10) + 0x801, *back = buf + (512u << 10);
		uint64_t at = 1u << 20;
		int i;

		for (i = 0; i < 8192; i++)
			odd[i] = (char)(i * 7 + 3);
		memset(back, 0, 8192);
		report("write-odd-address", io64_at(1, nsid, at, (uintptr_t)odd, 8192));
		report("read-odd-address", io64_at(2, nsid, at, (uintptr_t)odd, 8192));
		report("read-back-aligned", io64_at(2, nsid, at, (uintptr_t)back, 8192));
		report("odd-address-data-equal", memcmp(odd, back, 8192) == 0);
	}
	/* Unprivileged from here: the device must be readable/writable by uid 65534. */
	if (setgid(65534) || setuid(65534)) {
		perror("setuid");
		return 1;
	}
	report("unpriv-identify-ctrl", admin(6, 1, (uintptr_t)buf, 4096));
	report("unpriv-identify-nslist", admin(6, 2, (uintptr_t)buf, 4096));
	report("unpriv-get-log", admin(2, (127u << 16) | 2, (uintptr_t)buf, 512));
	report("unpriv-vendor-io", io64(0x81, nsid, 0, 0, 0));
	report("unpriv-read", io64(2, nsid, (uintptr_t)buf, 4096, 7));
	report("unpriv-write", io64(1, nsid, (uintptr_t)buf, 4096, 7));
	return 0;
}
