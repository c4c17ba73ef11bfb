/* audit: --audit: invariants checked after every event. */
#ifndef KVSIM_AUDIT_H
#define KVSIM_AUDIT_H

#include <stdint.h>

struct sim;
struct request;
struct event;
struct session_rec;

/* Stops the run (exit 3) with "audit: at t=...: " and the message. */
void audit_fail(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* After an event: the nodes it may have touched. */
void audit_event(struct sim *s, const struct event *ev);
/* A prefix past n_shared is cached only where the session ran. */
void audit_private(struct sim *s, uint32_t node, const struct request *r, uint32_t hit);
/* The frontier left after private blocks [from, to) is the one that
 * moving it block by block from `was` gives. */
void audit_frontier(struct sim *s, const struct request *r, struct session_rec was, uint32_t from,
		    uint32_t to);

#endif
