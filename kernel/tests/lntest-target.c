// SPDX-License-Identifier: GPL-2.0
/*
 * lntest-target: an idle process with a known name (comm "lntest-target")
 * for the latniced check in the test VM: a rule matches it by Comm= and
 * the driver reads its latency nice with "lntest getln PID".
 */
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 10;

	while (secs-- > 0)
		sleep(1);
	return 0;
}
