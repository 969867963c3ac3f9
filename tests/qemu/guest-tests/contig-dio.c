// contig-dio: one O_DIRECT write and read-back of LEN bytes from user memory that is
// physically contiguous in few runs, so the block layer can make it one request larger than
// max_segments pages (25-rnvme-chain.sh: commands over 2 MiB, chained PRP lists).
//
//   contig-dio DEVICE OFFSET LEN MAX_RUNS [POOL_MIB]
//
// A buffer of LEN bytes from malloc'ed memory has as many physical runs as the guest's page
// allocator happened to give it: after some frees, one run per page, and the block layer then
// splits at max_segments (128 for NVMe: 512 KiB). This helper faults in a pool (default 64 MiB)
// page by page, reads each page's frame number from /proc/self/pagemap (needs CAP_SYS_ADMIN),
// and picks the LEN-byte window with the fewest runs of consecutive frames. If that window has
// more than MAX_RUNS runs it fails (exit 3) without doing I/O. Otherwise it writes a pattern
// (depending on OFFSET) from the window with one pwrite, clears the window, reads it back with
// one pread and compares (exit 1 on a mismatch or short I/O).
//
// Output: `contig-dio: <len> bytes at <offset>: <runs> physical runs, written and read back equal`.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL
#define PFN_MASK ((1ULL << 55) - 1)
#define PRESENT (1ULL << 63)

static int die(int code, const char *what) {
    fprintf(stderr, "contig-dio: %s: %s\n", what, errno ? strerror(errno) : "failed");
    return code;
}

// The pattern byte at byte `i` of an I/O at device offset `off`.
static uint8_t pattern(uint64_t off, uint64_t i) {
    uint64_t x = (off + i) * 0x9e3779b97f4a7c15ULL;
    return (uint8_t)(x >> 56) ^ (uint8_t)i;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: contig-dio DEVICE OFFSET LEN MAX_RUNS [POOL_MIB]\n");
        return 2;
    }
    const char *dev = argv[1];
    uint64_t off = strtoull(argv[2], NULL, 0), len = strtoull(argv[3], NULL, 0);
    unsigned long max_runs = strtoul(argv[4], NULL, 0);
    uint64_t pool = (argc == 6 ? strtoull(argv[5], NULL, 0) : 64) << 20;
    if (!len || len % PAGE || off % 512 || len > pool) {
        fprintf(stderr, "contig-dio: LEN must be a non-zero multiple of 4096 within the pool, "
                        "OFFSET a multiple of 512\n");
        return 2;
    }
    size_t npages = pool / PAGE, wpages = len / PAGE;

    uint8_t *buf = mmap(NULL, pool, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return die(1, "mmap");
    for (size_t i = 0; i < npages; i++)
        buf[i * PAGE] = 1;

    uint64_t *pfn = calloc(npages, sizeof(*pfn));
    int pm = open("/proc/self/pagemap", O_RDONLY);
    if (!pfn || pm < 0)
        return die(1, "/proc/self/pagemap");
    off_t at = (off_t)((uintptr_t)buf / PAGE * sizeof(uint64_t));
    if (pread(pm, pfn, npages * sizeof(*pfn), at) != (ssize_t)(npages * sizeof(*pfn)))
        return die(1, "pagemap read");
    close(pm);
    for (size_t i = 0; i < npages; i++) {
        if (!(pfn[i] & PRESENT) || !(pfn[i] & PFN_MASK)) {
            errno = 0;
            return die(1, "pagemap shows no frame numbers (not present, or no CAP_SYS_ADMIN)");
        }
        pfn[i] &= PFN_MASK;
    }

    // breaks[i] = 1 where page i+1 does not follow page i physically. A window of w pages at s
    // has 1 + (breaks in s .. s+w-2) runs: a sliding sum.
    size_t best = 0, best_runs = SIZE_MAX, runs = 1;
    for (size_t i = 0; i + 1 < wpages; i++)
        runs += pfn[i + 1] != pfn[i] + 1;
    for (size_t s = 0;; s++) {
        if (runs < best_runs) {
            best_runs = runs;
            best = s;
        }
        if (s + wpages >= npages)
            break;
        runs -= pfn[s + 1] != pfn[s] + 1;
        runs += pfn[s + wpages] != pfn[s + wpages - 1] + 1;
    }
    if (best_runs > max_runs) {
        fprintf(stderr, "contig-dio: the best %llu-byte window of a %llu MiB pool has %zu "
                        "physical runs, more than %lu\n",
                (unsigned long long)len, (unsigned long long)(pool >> 20), best_runs, max_runs);
        return 3;
    }

    uint8_t *win = buf + best * PAGE;
    for (uint64_t i = 0; i < len; i++)
        win[i] = pattern(off, i);
    int fd = open(dev, O_RDWR | O_DIRECT);
    if (fd < 0)
        return die(1, dev);
    ssize_t n = pwrite(fd, win, len, (off_t)off);
    if (n != (ssize_t)len)
        return die(1, n < 0 ? "pwrite" : "short pwrite");
    memset(win, 0, len);
    n = pread(fd, win, len, (off_t)off);
    if (n != (ssize_t)len)
        return die(1, n < 0 ? "pread" : "short pread");
    close(fd);
    for (uint64_t i = 0; i < len; i++) {
        if (win[i] != pattern(off, i)) {
            fprintf(stderr, "contig-dio: byte %llu reads %#x, wrote %#x\n", (unsigned long long)i,
                    win[i], pattern(off, i));
            return 1;
        }
    }
    printf("contig-dio: %llu bytes at %llu: %zu physical runs, written and read back equal\n",
           (unsigned long long)len, (unsigned long long)off, best_runs);
    return 0;
}
