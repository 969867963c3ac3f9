// SPDX-License-Identifier: GPL-2.0
/*
 * QEMU 7.2 multi-threaded TCG race reproducer (scripts/qemu-mttcg-race.sh): one process on CPU 1
 * reads an MMIO register in a loop, another on CPU 0 switches a PCI function's Memory Space
 * enable off and on, which takes its BAR out of and back into the physical memory map.
 *
 *   mmio-race BDF TOGGLES PHYS
 *
 * BDF: the PCI function whose PCI_COMMAND is toggled (through its sysfs config file). PHYS: the
 * physical address the reader reads (through /dev/mem), e.g. 0xfee00030, the local APIC's
 * version register, which sits above the BAR in the memory map. Each read follows ~100
 * multiply-adds in the same straight-line block, so the reader is mostly running translated
 * code, not waiting for QEMU's global lock, when the map changes. Prints progress every 1000
 * toggles and `mmio-race: done N toggles` at the end; exit 0 then, 1 on a set-up error.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PCI_COMMAND 4
#define PCI_COMMAND_MEMORY 2

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int set_command(int fd, uint16_t v)
{
	return pwrite(fd, &v, sizeof(v), PCI_COMMAND) == sizeof(v) ? 0 : -1;
}

/* Never returns: reads *reg forever (killed by the parent). */
static void reader(volatile uint32_t *reg)
{
	uint64_t x = 1;

	if (pin(1))
		perror("mmio-race: pin reader to CPU 1");
	for (;;) {
#define STEP x = x * 2862933555777941757ULL + 3037000493ULL;
#define STEP10 STEP STEP STEP STEP STEP STEP STEP STEP STEP STEP
		STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10 STEP10
		x += *reg;
		__asm__ volatile("" : "+r"(x));
	}
}

int main(int argc, char **argv)
{
	char path[256];
	unsigned long phys;
	long toggles, i;
	uint16_t cmd;
	volatile uint32_t *reg;
	void *page;
	int cfd, mfd;
	pid_t kid;

	if (argc != 4) {
		fprintf(stderr, "usage: %s BDF TOGGLES PHYS\n", argv[0]);
		return 1;
	}
	toggles = atol(argv[2]);
	phys = strtoul(argv[3], NULL, 0);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", argv[1]);
	cfd = open(path, O_RDWR);
	if (cfd < 0 || pread(cfd, &cmd, sizeof(cmd), PCI_COMMAND) != sizeof(cmd)) {
		perror(path);
		return 1;
	}
	mfd = open("/dev/mem", O_RDONLY | O_SYNC);
	if (mfd < 0) {
		perror("/dev/mem");
		return 1;
	}
	page = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, (off_t)(phys & ~4095UL));
	if (page == MAP_FAILED) {
		perror("mmap /dev/mem");
		return 1;
	}
	reg = (volatile uint32_t *)((char *)page + (phys & 4095));
	printf("mmio-race: reading %#lx on CPU 1, toggling %s's memory enable on CPU 0\n", phys,
	       argv[1]);
	fflush(stdout);
	kid = fork();
	if (kid < 0) {
		perror("fork");
		return 1;
	}
	if (kid == 0)
		reader(reg);
	if (pin(0))
		perror("mmio-race: pin toggler to CPU 0");
	usleep(200000);
	for (i = 0; i < toggles; i++) {
		if (set_command(cfd, cmd & ~PCI_COMMAND_MEMORY) ||
		    set_command(cfd, cmd | PCI_COMMAND_MEMORY)) {
			perror("mmio-race: PCI_COMMAND write");
			break;
		}
		if ((i + 1) % 1000 == 0) {
			printf("mmio-race: %ld toggles\n", i + 1);
			fflush(stdout);
		}
	}
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	if (set_command(cfd, cmd))
		perror("mmio-race: restore PCI_COMMAND");
	printf("mmio-race: done %ld toggles\n", i);
	return i == toggles ? 0 : 1;
}
