// SPDX-License-Identifier: GPL-2.0
/*
 * ackwrite: acknowledged writes must survive a kill (issue #10). A static guest helper.
 *
 *   ackwrite write DEV FIRST N RUN SECS
 *       Overwrites blocks FIRST..FIRST+N-1 (4096 B, O_DIRECT) again and again, generation after
 *       generation, until killed or SECS seconds pass. Odd generations are written with O_DSYNC
 *       (the block layer sends them as FUA writes on a disk with a volatile write cache), even
 *       ones as plain writes followed by fdatasync() (a flush) after every 8 blocks. A write is
 *       acknowledged when write() (FUA) or the following fdatasync() (flush) returned; then, and
 *       only then, one line is printed on stdout (unbuffered, the console):
 *           ack-write: block=B gen=G
 *       Exits 1 after SECS (the kill that should have ended it did not come) or on an error.
 *   ackwrite check DEV FIRST N RUN ACKFILE
 *       ACKFILE holds "B G" lines: the newest acknowledged generation of block B. Each block is
 *       read back (O_DIRECT) and must hold generation G or G + 1 (the next write may have been in
 *       flight at the kill) of run RUN, header and every data byte. Prints one line per bad
 *       block and
 *           ack-survive: C acknowledged blocks checked, L lost
 *       Exits 0 iff L == 0 and C > 0.
 *
 * Block content: a 64-byte header "rnvme-ack run=RUN block=B gen=G" (NUL padded), then bytes
 * of a xorshift32 stream seeded from (RUN, B, G): a torn or stale block cannot pass.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BS 4096
#define HDR 64
#define BATCH 8

static void fill(unsigned char *b, uint32_t run, uint32_t blk, uint32_t gen)
{
	uint32_t x = run * 2654435761u ^ blk * 40503u ^ gen * 2246822519u;
	size_t i;

	memset(b, 0, HDR);
	snprintf((char *)b, HDR, "rnvme-ack run=%u block=%u gen=%u", run, blk, gen);
	if (x == 0)
		x = 1;
	for (i = HDR; i < BS; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		b[i] = (unsigned char)x;
	}
}

static void say(const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(1, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static int do_write(const char *dev, uint32_t first, uint32_t n, uint32_t run, unsigned secs)
{
	unsigned char *buf;
	char line[96];
	int fd_fua, fd;
	uint32_t gen, i, k;
	time_t end = time(NULL) + secs;

	if (posix_memalign((void **)&buf, BS, BS * BATCH))
		return 2;
	fd_fua = open(dev, O_WRONLY | O_DIRECT | O_DSYNC);
	fd = open(dev, O_WRONLY | O_DIRECT);
	if (fd_fua < 0 || fd < 0) {
		perror(dev);
		return 2;
	}
	for (gen = 1; time(NULL) < end; gen++) {
		for (i = 0; i < n && time(NULL) < end; i += BATCH) {
			uint32_t cnt = n - i < BATCH ? n - i : BATCH;

			for (k = 0; k < cnt; k++) {
				unsigned char *b = buf + (size_t)k * BS;
				int f = gen % 2 ? fd_fua : fd;

				fill(b, run, first + i + k, gen);
				if (pwrite(f, b, BS, (off_t)(first + i + k) * BS) != BS) {
					perror("ackwrite: pwrite");
					return 2;
				}
				if (gen % 2) {
					snprintf(line, sizeof(line), "ack-write: block=%u gen=%u\n",
						 first + i + k, gen);
					say(line);
				}
			}
			if (gen % 2 == 0) {
				if (fdatasync(fd)) {
					perror("ackwrite: fdatasync");
					return 2;
				}
				for (k = 0; k < cnt; k++) {
					snprintf(line, sizeof(line), "ack-write: block=%u gen=%u\n",
						 first + i + k, gen);
					say(line);
				}
			}
		}
	}
	say("ack-write: time is up and nothing killed us\n");
	return 1;
}

static int do_check(const char *dev, uint32_t first, uint32_t n, uint32_t run, const char *ackf)
{
	unsigned char *got, *want;
	unsigned checked = 0, lost = 0;
	uint32_t blk, gen;
	FILE *f = fopen(ackf, "r");
	int fd = open(dev, O_RDONLY | O_DIRECT);

	if (!f || fd < 0) {
		perror("ackwrite check: open");
		return 2;
	}
	if (posix_memalign((void **)&got, BS, BS) || posix_memalign((void **)&want, BS, BS))
		return 2;
	while (fscanf(f, "%u %u", &blk, &gen) == 2) {
		int ok = 0;
		uint32_t g;

		if (blk < first || blk >= first + n) {
			printf("ack-check: block %u outside the region\n", blk);
			lost++;
			continue;
		}
		checked++;
		if (pread(fd, got, BS, (off_t)blk * BS) != BS) {
			printf("ack-check: block %u: read failed: %s\n", blk, strerror(errno));
			lost++;
			continue;
		}
		for (g = gen; g <= gen + 1 && !ok; g++) {
			fill(want, run, blk, g);
			ok = !memcmp(got, want, BS);
		}
		if (!ok) {
			got[HDR - 1] = 0;
			printf("ack-check: block %u acknowledged at gen %u, holds '%s'\n", blk, gen,
			       (char *)got);
			lost++;
		}
	}
	printf("ack-survive: %u acknowledged blocks checked, %u lost\n", checked, lost);
	return lost == 0 && checked > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "write"))
		return do_write(argv[2], strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0),
				strtoul(argv[5], NULL, 0), strtoul(argv[6], NULL, 0));
	if (argc == 7 && !strcmp(argv[1], "check"))
		return do_check(argv[2], strtoul(argv[3], NULL, 0), strtoul(argv[4], NULL, 0),
				strtoul(argv[5], NULL, 0), argv[6]);
	fprintf(stderr, "usage: ackwrite write DEV FIRST N RUN SECS | check DEV FIRST N RUN ACKFILE\n");
	return 2;
}
