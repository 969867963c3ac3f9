// scatter-pt: one NVMe passthrough write and read-back (NVME_IOCTL_IO64_CMD) of LEN bytes from
// user memory in which no page is physically next to the one before it, so the command has one
// segment per page whatever the guest's page allocator hands out (26-rnvme-iommu.sh: commands
// of several segments behind an IOMMU, mapped by one call).
//
//   scatter-pt CHARDEV OFFSET LEN
//
// fio's buffers are as contiguous as the allocator made them: often one run for a whole 64 KiB
// buffer, and then every command is one segment. This helper faults in a pool of pages, reads
// each page's frame number from /proc/self/pagemap (needs CAP_SYS_ADMIN), keeps pages whose frame
// does not follow the last kept one's, and moves them (mremap) into one virtual window in that
// order. It checks the window's frames (exit 3 if any two neighbours are adjacent), writes a
// pattern (depending on OFFSET) at byte OFFSET of the namespace, clears the window, reads it
// back and compares (exit 1 on an error or a mismatch).
//
// Output: `scatter-pt: <len> bytes at <offset>: <pages> pages, none physically next to the one
// before, written and read back equal`.
#define _GNU_SOURCE
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

#define PAGE 4096UL
#define LBA 512UL
#define PFN_MASK ((1ULL << 55) - 1)
#define PRESENT (1ULL << 63)

static int die(int code, const char *what) {
    fprintf(stderr, "scatter-pt: %s: %s\n", what, errno ? strerror(errno) : "failed");
    return code;
}

// The pattern byte at byte `i` of an I/O at namespace byte `off`.
static uint8_t pattern(uint64_t off, uint64_t i) {
    uint64_t x = (off + i) * 0x9e3779b97f4a7c15ULL;
    return (uint8_t)(x >> 56) ^ (uint8_t)(i * 7);
}

// The frame number of the page at `addr`, 0 if not present.
static uint64_t pfn_of(int pagemap, const void *addr) {
    uint64_t e = 0;
    off_t at = (off_t)((uintptr_t)addr / PAGE * sizeof(e));
    if (pread(pagemap, &e, sizeof(e), at) != (ssize_t)sizeof(e) || !(e & PRESENT))
        return 0;
    return e & PFN_MASK;
}

// One read (opcode 0x02) or write (0x01) of `len` bytes at namespace byte `off`.
static int io(int fd, unsigned nsid, uint8_t opcode, void *buf, uint64_t off, uint64_t len) {
    struct nvme_passthru_cmd64 c;
    memset(&c, 0, sizeof(c));
    c.opcode = opcode;
    c.nsid = nsid;
    c.addr = (uint64_t)(uintptr_t)buf;
    c.data_len = (uint32_t)len;
    c.cdw10 = (uint32_t)(off / LBA);
    c.cdw11 = (uint32_t)((off / LBA) >> 32);
    c.cdw12 = (uint32_t)(len / LBA - 1);
    int r = ioctl(fd, NVME_IOCTL_IO64_CMD, &c);
    if (r != 0) {
        fprintf(stderr, "scatter-pt: opcode %#x: ioctl returned %d (%s)\n", opcode, r,
                r < 0 ? strerror(errno) : "NVMe status");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: scatter-pt CHARDEV OFFSET LEN\n");
        return 2;
    }
    uint64_t off = strtoull(argv[2], NULL, 0), len = strtoull(argv[3], NULL, 0);
    if (!len || len % PAGE || off % LBA || len > (1UL << 20)) {
        fprintf(stderr, "scatter-pt: LEN must be a non-zero multiple of 4096 up to 1 MiB, "
                        "OFFSET a multiple of 512\n");
        return 2;
    }
    size_t want = len / PAGE, pool_pages = 8 * want;
    int fd = open(argv[1], O_RDWR);
    if (fd < 0)
        return die(1, argv[1]);
    int nsid = ioctl(fd, NVME_IOCTL_ID);
    if (nsid <= 0)
        return die(1, "NVME_IOCTL_ID");
    int pagemap = open("/proc/self/pagemap", O_RDONLY);
    if (pagemap < 0)
        return die(1, "/proc/self/pagemap");

    uint8_t *pool = mmap(NULL, pool_pages * PAGE, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint8_t *win = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pool == MAP_FAILED || win == MAP_FAILED)
        return die(1, "mmap");
    // Keep pool pages whose frame is not the frame after the last kept one's, moved into the
    // window in order.
    size_t kept = 0;
    uint64_t last = 0;
    for (size_t k = 0; k < pool_pages && kept < want; k++) {
        uint8_t *p = pool + k * PAGE;
        p[0] = 1; // fault it in
        uint64_t pfn = pfn_of(pagemap, p);
        if (!pfn)
            return die(1, "pagemap (frame numbers need CAP_SYS_ADMIN)");
        if (kept && pfn == last + 1)
            continue;
        if (mremap(p, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, win + kept * PAGE) == MAP_FAILED)
            return die(1, "mremap");
        last = pfn;
        kept++;
    }
    if (kept < want) {
        fprintf(stderr, "scatter-pt: only %zu of %zu pages kept from the pool\n", kept, want);
        return 3;
    }
    // The window as the kernel will see it: no frame follows its neighbour's.
    for (size_t i = 1; i < want; i++) {
        uint64_t a = pfn_of(pagemap, win + (i - 1) * PAGE), b = pfn_of(pagemap, win + i * PAGE);
        if (!a || !b || b == a + 1) {
            fprintf(stderr, "scatter-pt: pages %zu and %zu of the window are adjacent\n", i - 1, i);
            return 3;
        }
    }

    for (uint64_t i = 0; i < len; i++)
        win[i] = pattern(off, i);
    if (io(fd, (unsigned)nsid, 0x01, win, off, len))
        return 1;
    memset(win, 0, len);
    if (io(fd, (unsigned)nsid, 0x02, win, off, len))
        return 1;
    for (uint64_t i = 0; i < len; i++) {
        if (win[i] != pattern(off, i)) {
            fprintf(stderr, "scatter-pt: byte %llu read back %#x, wrote %#x\n",
                    (unsigned long long)i, win[i], pattern(off, i));
            return 1;
        }
    }
    printf("scatter-pt: %llu bytes at %llu: %zu pages, none physically next to the one before, "
           "written and read back equal\n",
           (unsigned long long)len, (unsigned long long)off, want);
    return 0;
}
