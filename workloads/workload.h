/* workload: the request-source interface and the registry of generators. */
#ifndef KVSIM_WORKLOAD_H
#define KVSIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct request;
struct wl_schedule;

struct wl_env {
	uint32_t block_tokens; /* KV page size: hashes are per block of this many tokens */
	uint32_t max_context;  /* the model's context limit, prompt + output */
	uint64_t seed;         /* the scenario seed; sources derive their own streams */
	const char *base_dir;  /* relative file paths start here (the scenario's folder) */
	double rate_scale;     /* multiplies the arrival rate (mix weights); 1 normally */
	/* The rate schedule of a workload that gives none (a mix's, for its
	 * parts); NULL: none. Read by create only (it copies it). */
	const struct wl_schedule *schedule;
};

/* A benchmark's stage (inference-perf's load.stages; a vllm_bench run is
 * one): its arrivals are those in [start_ns, end_ns], in the order made. */
struct wl_stage_info {
	int64_t start_ns, end_ns; /* when it began; its last arrival */
	double rate;              /* requests per second it asks for */
	double duration_s;        /* as configured; 0: none (vllm_bench) */
	uint64_t requests;        /* how many it sends */
};

/* A source streams requests: it never holds more than the sessions that are
 * still going, so memory does not grow with requests served. */
struct wl_ops {
	const char *name; /* workload.kind */
	const char *description;
	/* Reads the workload object (errors name path + key) and returns the
	 * source's state, or NULL with err filled. Freed by destroy. */
	void *(*create)(const struct cJSON *json, const char *path, const struct wl_env *env,
			char *err, size_t errlen);
	/* Fills r with the next open-loop arrival (arrival times never decrease)
	 * and returns 1; returns 0 when the source is exhausted. */
	int (*next)(void *st, struct request *r);
	/* r ended at now_ns, completed or not (shed, failed). Returns 1 and fills
	 * out with its session's next turn (arrival >= now_ns), or returns 0 when
	 * the session is over. NULL: every request is a session of its own.
	 * out->hashes may be r->hashes on entry (the simulator lends the ended
	 * request's buffer so that a history is not copied): the next turn's
	 * hashes are then written over r's, and may move it (realloc). */
	int (*follow_up)(void *st, const struct request *r, int completed, int64_t now_ns,
			 struct request *out);
	void (*destroy)(void *st);
	/* After next or follow_up returned -1: what went wrong in the input
	 * ("FILE:LINE: ..."), or NULL when memory ran out. NULL hook: memory. */
	const char *(*error)(void *st);
	/* Input read and left out (skip_bad: malformed lines, and a session's
	 * turns after one left out): how many so far, with the first one's
	 * error ("FILE:LINE: ...") written into first (firstlen bytes) when
	 * there is one. NULL: a source that skips nothing. */
	uint64_t (*skipped)(void *st, char *first, size_t firstlen);
	/* 1: a request's blocks past its n_shared carry content of its own
	 * session (no other session's request names them), so they are cached
	 * only on nodes the session's requests ran on; the simulator then
	 * bounds the cached prefix elsewhere by n_shared without looking
	 * (pol_view.private_nodes). The generators' content ids are their
	 * session's own; a trace only declares its shared blocks, and a mix's
	 * parts number their sessions alike: 0. */
	int private_own;
	/* 1: r->epoch names a namespace of content: requests of different
	 * epochs share no block, the epochs of next's arrivals never decrease,
	 * and a follow-up has its request's epoch. The simulator then forgets
	 * an epoch's computed blocks once a later epoch has arrived and the
	 * epoch's last request has ended. A trace's repeat passes are its
	 * epochs; elsewhere (a mix's parts count their own) 0: epochs unused. */
	int epochs;
	/* The workload key of its arrival rate ("sessions_per_s"), which
	 * `kvsim plan --search rate` varies, and its value when the scenario
	 * leaves it out; NULL and 0 where the workload has none (a mix, a
	 * trace). */
	const char *rate_key;
	double rate_default;
	/* Its stages, for results per stage (summary.json's stages): points
	 * *out at n windows (the source's own, valid until destroy) and
	 * returns n. Called after the run; a stage not reached is zero. NULL:
	 * a workload without stages. */
	size_t (*stages)(void *st, const struct wl_stage_info **out);
};

const struct wl_ops *wl_find(const char *kind);
const struct wl_ops *const *wl_all(size_t *n);
void wl_names(char *out, size_t outlen);
/* Creates the source that json's "kind" names (default "chat"). */
void *wl_create(const struct cJSON *json, const struct wl_env *env, const struct wl_ops **ops,
		char *err, size_t errlen);

struct scenario;
/* Writes the scenario's workload as kvsim JSONL to path (through a
 * temporary name): every session arriving within duration_s with all its
 * turns, each later turn with its think time after the previous answer, so
 * that replaying the file reproduces the generator's run. *written gets the
 * request count. The caller validates the scenario first (sim_validate).
 * Returns 0, 2 (bad input) or 3 (I/O, memory). (workloads/tracegen.c) */
int wl_trace_gen(const struct scenario *sc, const char *path, uint64_t *written, char *err,
		 size_t errlen);

#endif
