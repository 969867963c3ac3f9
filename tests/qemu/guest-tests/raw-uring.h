/* SPDX-License-Identifier: GPL-2.0 */
/*
 * raw-uring.h: a minimal io_uring client on the raw system calls (io_uring_setup(2),
 * io_uring_enter(2), io_uring_register(2)) for the static guest helpers premap-stress.c and
 * chardev-fuzz.c: the guest has no liburing, and the helpers are built on the host with
 * `cc -static` against the host's uapi headers (same ABI as the guest kernel's).
 *
 * One ring per struct ring; SQEs of 64 or 128 bytes and CQEs of 16 or 32 bytes as the setup
 * flags say. Not thread-safe (each helper process drives its own rings).
 */
#ifndef RAW_URING_H
#define RAW_URING_H

#include <errno.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#define __NR_io_uring_enter 426
#define __NR_io_uring_register 427
#endif

/** A mapped io_uring instance. */
struct ring {
	int fd;
	unsigned int flags;	/* setup flags */
	unsigned int sqe_size, cqe_size;
	unsigned int sq_entries, cq_entries;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	unsigned char *sqes, *cqes;
	void *sq_map, *cq_map, *sqe_map;
	size_t sq_len, cq_len, sqe_len;
	unsigned int pending;	/* SQEs filled, not yet passed to io_uring_enter */
};

static inline int uring_sys_setup(unsigned int entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static inline int uring_sys_enter(int fd, unsigned int submit, unsigned int min_complete,
				  unsigned int flags)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, min_complete, flags, NULL, 0);
}

static inline int uring_sys_register(int fd, unsigned int op, const void *arg, unsigned int nr)
{
	return (int)syscall(__NR_io_uring_register, fd, op, arg, nr);
}

/** Unmaps the ring's memory and closes its file (in-flight requests complete in the kernel). */
static inline void uring_exit(struct ring *r)
{
	if (r->sqe_map)
		munmap(r->sqe_map, r->sqe_len);
	if (r->cq_map && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_len);
	if (r->sq_map)
		munmap(r->sq_map, r->sq_len);
	if (r->fd >= 0)
		close(r->fd);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

/** Sets up a ring of `entries` SQEs with setup `flags`; returns 0 or -errno. */
static inline int uring_init(struct ring *r, unsigned int entries, unsigned int flags)
{
	struct io_uring_params p;
	int e;

	memset(r, 0, sizeof(*r));
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	r->fd = uring_sys_setup(entries, &p);
	if (r->fd < 0) {
		e = -errno;
		r->fd = -1;
		return e;
	}
	r->flags = flags;
	r->sqe_size = (flags & IORING_SETUP_SQE128) ? 128 : 64;
	r->cqe_size = (flags & IORING_SETUP_CQE32) ? 32 : 16;
	r->sq_entries = p.sq_entries;
	r->cq_entries = p.cq_entries;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + (size_t)p.cq_entries * r->cqe_size;
	if ((p.features & IORING_FEAT_SINGLE_MMAP) && r->cq_len > r->sq_len)
		r->sq_len = r->cq_len;
	r->sq_map = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			 IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED) {
		r->sq_map = NULL;
		goto fail;
	}
	if (p.features & IORING_FEAT_SINGLE_MMAP) {
		r->cq_map = r->sq_map;
	} else {
		r->cq_map = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
				 r->fd, IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED) {
			r->cq_map = NULL;
			goto fail;
		}
	}
	r->sqe_len = (size_t)p.sq_entries * r->sqe_size;
	r->sqe_map = mmap(NULL, r->sqe_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			  r->fd, IORING_OFF_SQES);
	if (r->sqe_map == MAP_FAILED) {
		r->sqe_map = NULL;
		goto fail;
	}
	r->sq_head = (unsigned int *)((char *)r->sq_map + p.sq_off.head);
	r->sq_tail = (unsigned int *)((char *)r->sq_map + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_map + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_map + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_map + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_map + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_map + p.cq_off.ring_mask);
	r->sqes = r->sqe_map;
	r->cqes = (unsigned char *)r->cq_map + p.cq_off.cqes;
	return 0;
fail:
	e = -errno;
	uring_exit(r);
	return e;
}

/** The next free SQE (zeroed), or NULL if the submission queue is full. */
static inline struct io_uring_sqe *uring_get_sqe(struct ring *r)
{
	unsigned int head = __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
	unsigned int tail = *r->sq_tail + r->pending;
	struct io_uring_sqe *sqe;

	if (tail - head >= r->sq_entries)
		return NULL;
	sqe = (struct io_uring_sqe *)(r->sqes + (size_t)(tail & *r->sq_mask) * r->sqe_size);
	memset(sqe, 0, r->sqe_size);
	r->sq_array[tail & *r->sq_mask] = tail & *r->sq_mask;
	r->pending++;
	return sqe;
}

/**
 * Publishes the filled SQEs and enters the kernel, waiting for `wait` completions; returns
 * io_uring_enter's result (SQEs consumed) or -errno.
 */
static inline int uring_submit(struct ring *r, unsigned int wait)
{
	unsigned int n = r->pending;
	int ret;

	__atomic_store_n(r->sq_tail, *r->sq_tail + n, __ATOMIC_RELEASE);
	r->pending = 0;
	do {
		ret = uring_sys_enter(r->fd, n, wait, wait ? IORING_ENTER_GETEVENTS : 0);
	} while (ret < 0 && errno == EINTR);
	return ret < 0 ? -errno : ret;
}

/** The oldest unconsumed CQE, or NULL. */
static inline struct io_uring_cqe *uring_peek_cqe(struct ring *r)
{
	unsigned int head = *r->cq_head;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return NULL;
	return (struct io_uring_cqe *)(r->cqes + (size_t)(head & *r->cq_mask) * r->cqe_size);
}

/** Consumes the CQE returned by uring_peek_cqe. */
static inline void uring_cqe_seen(struct ring *r)
{
	__atomic_store_n(r->cq_head, *r->cq_head + 1, __ATOMIC_RELEASE);
}

#endif /* RAW_URING_H */
