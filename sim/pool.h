/* pool: the run's request and session records, reused through free lists. */
#ifndef KVSIM_POOL_H
#define KVSIM_POOL_H

#include <stdint.h>

struct sim;
struct request;
struct session_rec;

/* The pool's state (s->pool): the session map; pool_free frees every
 * record handed back, and the live sessions' records. */
void pool_init(struct sim *s);
void pool_free(struct sim *s);
/* A cleared request from the pool (NULL after sim_fail); pool_req_put
 * hands it back. */
struct request *pool_req_get(struct sim *s);
void pool_req_put(struct sim *s, struct request *r);
/* The live session's record, made on its first request (NULL after
 * sim_fail); pool_session_end frees it with its last. */
struct session_rec *pool_session_get(struct sim *s, uint64_t id);
void pool_session_end(struct sim *s, struct session_rec *rec);

#endif
