// admin-latency: the time of N admin commands (Get Features, Number of Queues) sent one at a time
// through a controller's character device with NVME_IOCTL_ADMIN_CMD, the C driver's ioctl ABI
// (rnvme's /dev/rnvme<C> and the C driver's /dev/nvme<C> both take it). Each call is timed
// alone with CLOCK_MONOTONIC, so the figure is the ioctl's round trip: submission, the admin
// queue's interrupt, and the waiter's wake-up (58-rnvme-admin-irq.sh runs it pinned to each CPU
// with taskset, so the wake-up is once on the interrupt's CPU and once on the other one).
//
//   admin-latency DEVICE N
//
// Output: `<device>: n <N> p10 <us> p50 <us> p90 <us> us`. Exit 1 if the device cannot be
// opened or a command fails (an NVMe status is printed), 2 on bad arguments.
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#define OPC_GET_FEATURES 0x0a
#define FID_NUMBER_OF_QUEUES 0x07
#define MAX_N 100000

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    char *end;
    long n;

    if (argc != 3) {
        fprintf(stderr, "usage: admin-latency DEVICE N\n");
        return 2;
    }
    n = strtol(argv[2], &end, 10);
    if (*end || n < 1 || n > MAX_N) {
        fprintf(stderr, "admin-latency: N must be 1-%d\n", MAX_N);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    double *us = calloc(n, sizeof(*us));
    if (!us) {
        perror("calloc");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        struct nvme_admin_cmd cmd;

        memset(&cmd, 0, sizeof(cmd));
        cmd.opcode = OPC_GET_FEATURES;
        cmd.cdw10 = FID_NUMBER_OF_QUEUES;
        double t0 = now_us();
        int r = ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
        us[i] = now_us() - t0;
        if (r != 0) {
            if (r < 0)
                perror("admin-latency: NVME_IOCTL_ADMIN_CMD");
            else
                fprintf(stderr, "admin-latency: NVMe status %#x\n", r);
            return 1;
        }
    }
    qsort(us, n, sizeof(*us), cmp_double);
    printf("%s: n %ld p10 %.0f p50 %.0f p90 %.0f us\n", argv[1], n, us[n / 10], us[n / 2],
           us[n * 9 / 10]);
    return 0;
}
