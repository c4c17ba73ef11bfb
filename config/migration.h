/* migration: what to do with a session's KV held elsewhere (scenario and policy). */
#ifndef KVSIM_MIGRATION_H
#define KVSIM_MIGRATION_H

/* The scenario's router.migration is AUTO, TRANSFER or RECOMPUTE; a
 * policy's decision may also say DEFAULT: the scenario's mode. */
enum migration_mode {
	MIG_DEFAULT,   /* a decision's "no preference": router.migration decides */
	MIG_AUTO,      /* the cheaper by the cost model and the links' current load */
	MIG_TRANSFER,  /* move the blocks over the link */
	MIG_RECOMPUTE, /* prefill them again */
};

#endif
