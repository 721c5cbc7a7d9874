/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A verbs client that never confirms (tests/common/cm_silent.c): it prints
 * "answered" once the server's REP is in and holds the half-open connection
 * until killed or hold_s seconds have passed. For
 * tests/rxe/suites/22-pingpong-silent.sh: such a peer must not keep other
 * clients out.
 *
 *   pp_cm_silent_client HOST PORT [HOLD_S]
 * Exit: 0 held, 1 no answer (or an error), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cm_silent.h"

int main(int argc, char **argv)
{
	struct cm_silent *s;
	char why[200] = "";
	int hold_s = argc > 3 ? atoi(argv[3]) : 30;

	if (argc < 3 || hold_s <= 0) {
		fprintf(stderr, "usage: %s HOST PORT [HOLD_S]\n", argv[0]);
		return 2;
	}
	if (cm_silent_open(argv[1], atoi(argv[2]), &s, why, sizeof(why))) {
		fprintf(stderr, "silent client: %s\n", why);
		return 1;
	}
	printf("answered\n");
	fflush(stdout);
	sleep((unsigned)hold_s); /* holding, not synchronising: the test kills us */
	cm_silent_close(s);
	return 0;
}
