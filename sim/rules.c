/* rules: the router's mechanisms around the policy's choice, one rule each,
 * in the order they run (docs/policies.md, "Routing rules"). A new
 * mechanism that keeps, moves or rejects a request is one function here
 * and one row of rules_list, with its key in the mechanism table
 * (config/mech.c). */
#include "sim/rules.h"

#include <math.h>

#include "sim/pd.h"
#include "sim/select.h"
#include "sim/sim_int.h"
#include "sim/views.h"

static int always(const struct sim *s)
{
	(void)s;
	return 1;
}

/* health: an unhealthy node gets no work while a healthy one can take it;
 * a session on it moves (with its KV where a path exists). */
static int health_on(const struct sim *s)
{
	return s->rt.mech.health;
}

static enum rule_verdict health(struct sim *s, struct route_ctx *c)
{
	if (!views_unhealthy(s, c->view, c->dst))
		return RULE_KEEP;
	int32_t alt = select_least_outstanding_healthy(s, c->view);
	if (alt < 0)
		return RULE_KEEP;
	c->dst = (uint32_t)alt;
	c->why = MR_HEALTH;
	return RULE_REDIRECT;
}

/* kv_watermark (watermark_action close): a node above the KV watermark
 * takes no new sessions. */
static int watermark_closes(const struct sim *s)
{
	return s->rt.mech.watermark_action == WM_CLOSE;
}

static enum rule_verdict watermark(struct sim *s, struct route_ctx *c)
{
	if (!c->new_session || !views_closed(s, c->view, c->dst))
		return RULE_KEEP;
	int32_t alt = select_least_queued(s, c->view, UINT32_MAX, 1);
	if (alt < 0) {
		c->reason = "kv_watermark";
		return RULE_REJECT;
	}
	c->dst = (uint32_t)alt;
	return RULE_REDIRECT;
}

/* Whether a new session must find a node open to new sessions. */
static int need_open(const struct sim *s, const struct route_ctx *c)
{
	return c->new_session && s->rt.mech.watermark_action == WM_CLOSE;
}

/* shed predicted_wait: a prefill-wait test in the spirit of Mooncake's
 * early rejection (which predicts load at decode time in a disaggregated
 * cluster): past the predicted-TTFT limit, the node with the shortest
 * predicted wait; none under it: shed. New sessions meet a lower limit,
 * so under overload they go before continuing sessions. */
static int shed_on(const struct sim *s)
{
	return s->rt.mech.shed == SHED_PREDICTED_WAIT;
}

static enum rule_verdict predicted_wait(struct sim *s, struct route_ctx *c)
{
	double limit = s->rt.mech.shed_wait_x * s->sc->slo_ttft_p99_s;
	if (c->new_session)
		limit *= s->sc->router.new_session_queue_frac;
	if (select_predicted_ttft_s(s, c->dst, c->r) <= limit)
		return RULE_KEEP;
	int32_t alt = select_least_predicted(s, c->view, need_open(s, c));
	if (alt < 0 || select_predicted_ttft_s(s, (uint32_t)alt, c->r) > limit) {
		c->reason = c->new_session ? "overload_new_session" : "predicted_wait";
		return RULE_REJECT;
	}
	c->dst = (uint32_t)alt;
	return RULE_REDIRECT;
}

/* queue_bound: the hard bound on a node's queue, every column's
 * backstop: past it a request goes to the node with the shortest queue
 * under it. With admission control new sessions meet a lower bound. */
static enum rule_verdict queue_bound(struct sim *s, struct route_ctx *c)
{
	uint32_t bound = (uint32_t)s->sc->router.max_queue_per_node;
	int favour = s->rt.mech.shed != SHED_NONE && c->new_session;
	if (favour) {
		bound = (uint32_t)floor(s->sc->router.new_session_queue_frac * bound);
		if (bound < 1) /* a bound of 1 still admits new sessions to an empty queue */
			bound = 1;
	}
	if (s->nodes[c->dst].n_waiting < bound)
		return RULE_KEEP;
	int32_t alt = select_least_queued(s, c->view, bound, need_open(s, c));
	if (alt < 0) {
		c->reason = favour ? "overload_new_session" : "queue_full";
		return RULE_REJECT;
	}
	c->dst = (uint32_t)alt;
	return RULE_REDIRECT;
}

/* context: a request longer than the model's context fails. */
static enum rule_verdict context(struct sim *s, struct route_ctx *c)
{
	const struct request *r = c->r;
	if ((uint64_t)r->prompt_tokens + r->output_tokens <= (uint64_t)s->sc->cluster.model->max_context)
		return RULE_KEEP;
	c->state = REQ_FAILED;
	c->reason = "exceeds_context";
	return RULE_REJECT;
}

/* pd_handover (pools): a prefill node's request is disaggregated, or
 * prefills on its decode node under router.disagg.min_prefill_tokens
 * (pd.c). */
static int disaggregated(const struct sim *s)
{
	return s->sc->disaggregated;
}

static enum rule_verdict pd_handover(struct sim *s, struct route_ctx *c)
{
	int32_t to = pd_route(s, c->r, c->dst);
	if (to < 0) {
		c->state = REQ_FAILED;
		c->reason = "exceeds_kv_capacity";
		return RULE_REJECT;
	}
	if ((uint32_t)to == c->dst)
		return RULE_KEEP;
	c->dst = (uint32_t)to;
	return RULE_REDIRECT;
}

/* kv_capacity: a request whose KV cannot fit the node's cache whole fails. */
static enum rule_verdict kv_capacity(struct sim *s, struct route_ctx *c)
{
	const struct node *n = &s->nodes[c->dst];
	if (node_blocks_for(n, (uint64_t)c->r->prompt_tokens + c->r->output_tokens) <= n->kv.n_blocks)
		return RULE_KEEP;
	c->r->node = (int32_t)c->dst;
	pd_drop(s, c->r);
	c->state = REQ_FAILED;
	c->reason = "exceeds_kv_capacity";
	return RULE_REJECT;
}

const struct route_rule rules_list[] = {
	{"health", health_on, health},
	{"kv_watermark", watermark_closes, watermark},
	{"predicted_wait", shed_on, predicted_wait},
	{"queue_bound", always, queue_bound},
	{"context", always, context},
	{"pd_handover", disaggregated, pd_handover},
	{"kv_capacity", always, kv_capacity},
};
const int rules_count = (int)(sizeof rules_list / sizeof rules_list[0]);

void rules_init(struct sim *s)
{
	s->rt.n_rules = 0;
	for (int k = 0; k < rules_count && s->rt.n_rules < RULES_MAX; k++)
		if (rules_list[k].enabled(s))
			s->rt.rules[s->rt.n_rules++] = &rules_list[k];
}

enum rule_verdict rules_apply(struct sim *s, struct route_ctx *c)
{
	enum rule_verdict out = RULE_KEEP;
	for (uint32_t k = 0; k < s->rt.n_rules; k++) {
		c->state = REQ_SHED;
		enum rule_verdict v = s->rt.rules[k]->apply(s, c);
		if (v == RULE_REJECT)
			return v;
		if (v == RULE_REDIRECT)
			out = RULE_REDIRECT;
	}
	return out;
}

_Static_assert(sizeof rules_list / sizeof rules_list[0] <= RULES_MAX,
	       "rules_list outgrew RULES_MAX (sim_int.h)");
