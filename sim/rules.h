/* rules: the router's mechanisms as a declared list of rules, run in a
 * fixed order on the node the policy chose. */
#ifndef KVSIM_RULES_H
#define KVSIM_RULES_H

#include <stdint.h>

#include "config/mech.h"
#include "sim/request.h"

struct sim;
struct pol_node_view;

/* One routing decision as the rules see it: the request, the routers'
 * view it was routed with, the node chosen so far, and why a session
 * moving there would move. A rule that rejects says how (state) and
 * why (reason, the requests.csv reason). */
struct route_ctx {
	struct request *r;
	struct pol_node_view *view;
	uint32_t dst;
	int new_session;     /* the session's first request, not yet placed */
	enum mig_reason why; /* MR_POLICY, MR_THRESHOLD, MR_HEALTH */
	enum req_state state; /* REQ_SHED or REQ_FAILED, on a rejection */
	const char *reason;
};

enum rule_verdict { RULE_KEEP, RULE_REDIRECT, RULE_REJECT };

/* A rule: its name (docs/policies.md, "Routing rules"), whether the
 * column runs it, and what it does to the decision. */
struct route_rule {
	const char *name;
	int (*enabled)(const struct sim *s);
	enum rule_verdict (*apply)(struct sim *s, struct route_ctx *c);
};

/* The rules in the order they run. */
extern const struct route_rule rules_list[];
extern const int rules_count;

/* The column's rules (s->rt.rules): those the scenario and mechanisms
 * enable, in order. After the router's and the pools' set-up. */
void rules_init(struct sim *s);
/* Runs the column's rules on c in order: RULE_REJECT at the first that
 * rejects (c->state, c->reason set), else RULE_KEEP or RULE_REDIRECT
 * (some rule moved c->dst). */
enum rule_verdict rules_apply(struct sim *s, struct route_ctx *c);

#endif
