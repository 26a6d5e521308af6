/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The two halves of a hackbench-like message load, shared by the in-VM
 * benchmark (lnbench.c) and the scheduler lab (bench/lab/lnlab.c): a
 * receiver counts 100-byte messages on its socket, a sender writes them to
 * every receiver of its group, both until the other end goes.
 */
#ifndef HACKLOAD_H
#define HACKLOAD_H

#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define HACKLOAD_MSG_SIZE 100

static inline void hackload_receiver(int fd, volatile uint64_t *count)
{
	char buf[HACKLOAD_MSG_SIZE];

	for (;;) {
		size_t got = 0;

		while (got < HACKLOAD_MSG_SIZE) {
			ssize_t n = read(fd, buf + got, HACKLOAD_MSG_SIZE - got);

			if (n <= 0)
				_exit(n < 0);
			got += (size_t)n;
		}
		__atomic_add_fetch(count, 1, __ATOMIC_RELAXED);
	}
}

static inline void hackload_sender(const int *fds, int nfds)
{
	char buf[HACKLOAD_MSG_SIZE];

	memset(buf, 'x', sizeof(buf));
	for (;;)
		for (int i = 0; i < nfds; i++)
			if (write(fds[i], buf, sizeof(buf)) != sizeof(buf))
				_exit(1);
}

#endif
