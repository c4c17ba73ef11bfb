/* iteration: `kvsim cost`: one iteration of one replica, its predicted time term by term and its power. */
#ifndef KVSIM_ITERATION_H
#define KVSIM_ITERATION_H

/* What kvsim cost asks about: the replica (as scenario values, NULL: the
 * embedded default scenario's) and the batch of one iteration. */
struct iter_query {
	const char *gpu, *model, *tp, *dtype, *kind, *profiles, *catalog;
	double prefill, cached, batch, context;
	int have_ctx, json;
};

/* Loads the replica q names (taking all of HBM, so that large models still
 * get a KV cache), predicts the iteration and prints its terms, the bound
 * that dominates and one GPU's power while it runs, as text or (q->json)
 * one JSON line on stdout. Returns 0, 2 for a bad replica, 3 for an
 * internal error, after reporting on stderr as "kvsim cost: ...". */
int iter_report(const struct iter_query *q);

#endif
