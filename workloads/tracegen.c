/* tracegen: writes a scenario's workload as a kvsim JSONL trace (`kvsim trace gen`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/afile.h"
#include "config/config.h"
#include "base/interrupt.h"
#include "sim/request.h"
#include "workloads/trace.h"
#include "workloads/workload.h"

int wl_trace_gen(const struct scenario *sc, const char *path, uint64_t *written, char *err,
		 size_t errlen)
{
	*written = 0;
	int rc = 0;
	struct wl_env wenv = {(uint32_t)sc->cluster.engine.kv_block_tokens,
			      (uint32_t)sc->cluster.model->max_context, sc->seed, sc->base_dir, 1.0,
			      NULL};
	const struct wl_ops *wl = NULL;
	void *st = wl_create(sc->workload, &wenv, &wl, err, errlen);
	if (!st)
		return 2;
	struct request a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	struct afile f = {0};
	if (afile_open(&f, path, err, errlen)) {
		rc = 3;
		goto done;
	}
	uint32_t B = (uint32_t)sc->cluster.engine.kv_block_tokens;
	int64_t end = (int64_t)llround(sc->duration_s * 1e9);
	int got = 0;
	/* An interrupt stops it between sessions; the file is then discarded. */
	while (!intr_caught() && (got = wl->next(st, &a)) == 1 && a.arrival_ns <= end) {
		trace_write_kvsim(f.f, &a, B, 0);
		(*written)++;
		/* The session's later turns, as if each answer came at time 0:
		 * their arrival is then the think time. */
		struct request *cur = &a, *nxt = &b;
		while (wl->follow_up && (got = wl->follow_up(st, cur, 1, 0, nxt)) == 1) {
			trace_write_kvsim(f.f, nxt, B, nxt->arrival_ns);
			(*written)++;
			struct request *t = cur;
			cur = nxt;
			nxt = t;
		}
		if (got < 0)
			break;
	}
	if (got < 0) {
		const char *why = wl->error ? wl->error(st) : NULL;
		snprintf(err, errlen, "%s", why ? why : "out of memory in the workload");
		rc = why ? 2 : 3;
		goto done;
	}
	if (intr_caught()) {
		rc = intr_interrupted(err, errlen);
		goto done;
	}
	if (afile_commit(&f, err, errlen))
		rc = 3;
done:
	afile_discard(&f);
	free(a.hashes);
	free(b.hashes);
	wl->destroy(st);
	return rc;
}
