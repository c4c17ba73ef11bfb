/* interrupt: SIGINT and SIGTERM recorded, for a run to stop at its next step. */
#include "base/interrupt.h"

#include <stdio.h>
#include <string.h>

volatile sig_atomic_t intr_signal;

static void intr_on_signal(int sig)
{
	intr_signal = sig;
}

void intr_catch(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = intr_on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a process waiting (sweep's pool) wakes with EINTR. */
	static const int sigs[] = {SIGINT, SIGTERM};
	for (int i = 0; i < 2; i++) {
		struct sigaction was;
		if (sigaction(sigs[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
	}
}

int intr_interrupted(char *err, size_t errlen)
{
	snprintf(err, errlen, "interrupted by %s", intr_signal == SIGINT ? "SIGINT" : "SIGTERM");
	return 128 + intr_signal;
}
