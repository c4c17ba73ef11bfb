/* interrupt: SIGINT and SIGTERM recorded, for a run to stop at its next step. */
#ifndef KVSIM_INTERRUPT_H
#define KVSIM_INTERRUPT_H

#include <signal.h>
#include <stddef.h>

/* The signal caught (SIGINT, SIGTERM), or 0. The library's one global: a
 * signal handler can only leave a flag, and long loops poll it (the event
 * loop once per event, so the read is inline). */
extern volatile sig_atomic_t intr_signal;

/* Installs the handler for SIGINT and SIGTERM; a signal ignored from the
 * start stays ignored (nohup, a background job of a script). */
void intr_catch(void);

static inline int intr_caught(void)
{
	return intr_signal;
}

/* 128 + the signal caught, with err saying which ("interrupted by SIGINT"). */
int intr_interrupted(char *err, size_t errlen);

#endif
