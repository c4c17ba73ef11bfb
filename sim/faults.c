/* faults: the fault schedule: crashes and recoveries, slow-downs, links, cooling. */
#include "sim/faults.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/links.h"
#include "sim/pd.h"
#include "sim/router.h"
#include "sim/runlog.h"
#include "sim/sim_int.h"
#include "sim/thermal.h"
#include "sim/views.h"

/* Node i crashes: it loses its HBM contents, and its requests (queued,
 * running, swapped out) are routed again. A slot not held, or still
 * loading its model, has nothing to lose; a draining node's requests are
 * routed again, and, empty, it is released after the event (autoscale.c). */
static void crash(struct sim *s, uint32_t i)
{
	if (s->sl.nstate[i] == NS_UP ? !s->alive[i] : s->sl.nstate[i] != NS_DRAINING)
		return;
	router_empty_node(s, i);
}

int faults_init(struct sim *s)
{
	const struct scenario *sc = s->sc;
	size_t heads = (size_t)4 * s->n_nodes;
	s->flt.ev_fault = sim_add_event_kind(s, faults_ev_fault, NULL, EVK_SLOTS);
	s->flt.crashes = calloc(s->n_nodes, sizeof *s->flt.crashes);
	if (s->flt.ev_fault < 0 || !s->flt.crashes)
		return -1;
	s->flt.fault_head = malloc(heads * sizeof *s->flt.fault_head);
	s->flt.fault_next = malloc((sc->n_faults > 0 ? (size_t)sc->n_faults : 1) * sizeof *s->flt.fault_next);
	if (!s->flt.fault_head || !s->flt.fault_next)
		return -1;
	for (size_t k = 0; k < heads; k++)
		s->flt.fault_head[k] = -1;
	for (int f = 0; f < sc->n_faults; f++) {
		const struct fault_cfg *fc = &sc->faults[f];
		int64_t at = (int64_t)llround(fc->at_s * 1e9);
		if (!evq_push_tag(&s->q, at, s->flt.ev_fault, FAULT_START, f, NULL))
			return -1;
		if (fc->duration_s >= 0 &&
		    !evq_push_tag(&s->q, at + (int64_t)llround(fc->duration_s * 1e9), s->flt.ev_fault,
				  FAULT_END, f, NULL))
			return -1;
	}
	return 0;
}

/* Puts fault f in force on its (kind, target), or takes it out; returns
 * the list head of the faults then in force there (-1: none). A fault's
 * end always follows its start (at + duration, pushed after it). */
static int32_t in_force(struct sim *s, int32_t f, int end)
{
	const struct fault_cfg *fc = &s->sc->faults[f];
	int32_t *head = &s->flt.fault_head[(size_t)fc->kind * s->n_nodes + (uint32_t)fc->target];
	if (!end) {
		s->flt.fault_next[f] = *head;
		*head = f;
		return *head;
	}
	int32_t *p = head;
	while (*p != f) {
		assert(*p >= 0);
		p = &s->flt.fault_next[*p];
	}
	*p = s->flt.fault_next[f];
	return *head;
}

/* The product of the factors of the faults in a list (1: none). */
static double factor_product(const struct sim *s, int32_t head)
{
	double x = 1.0;
	for (int32_t f = head; f >= 0; f = s->flt.fault_next[f])
		x *= s->sc->faults[f].factor;
	return x;
}

/* Overlapping faults compose: a node stays down while any crash of it is
 * in force (its last recovery brings it back; a permanent crash never
 * ends); slow-down and link factors multiply while they hold; a server's
 * inlet is the hottest of its cooling faults in force. */
void faults_ev_fault(struct sim *s, const struct event *ev)
{
	const struct fault_cfg *f = &s->sc->faults[ev->id];
	int end = ev->tag == FAULT_END;
	uint32_t t = (uint32_t)f->target;
	if (s->log.te) {
		static const char *const names[] = {"crash", "slow", "link", "cooling"};
		char args[120];
		snprintf(args, sizeof args, "\"target\":%u,\"phase\":\"%s\"", t, end ? "end" : "start");
		runlog_trace_event(s, names[f->kind], 'i', 0, 0, s->now, 0, args);
	}
	int32_t head = in_force(s, (int32_t)ev->id, end);
	switch (f->kind) {
	case FAULT_CRASH:
		if (!end)
			crash(s, t); /* nothing if already down */
		else if (head < 0 && !s->alive[t] && s->sl.nstate[t] == NS_UP) {
			views_set_up(s, t, 1);
			views_refresh(s, t);
		}
		break;
	case FAULT_SLOW:
		thermal_advance(s, t);
		s->hl[t].slow = factor_product(s, head);
		break;
	case FAULT_LINK:
		links_scale_server(s, t, factor_product(s, head));
		break;
	case FAULT_COOLING: {
		double ambient = s->sc->cluster.thermal.ambient_c;
		if (head >= 0)
			ambient = s->sc->faults[head].ambient_c;
		for (int32_t k = head; k >= 0; k = s->flt.fault_next[k])
			ambient = fmax(ambient, s->sc->faults[k].ambient_c);
		for (uint32_t i = 0; i < s->n_nodes; i++) {
			if ((uint32_t)s->nodes[i].server != t)
				continue;
			thermal_advance(s, i);
			s->hl[i].ambient_c = ambient;
		}
		break;
	}
	}
}

void faults_free(struct sim *s)
{
	free(s->flt.fault_head);
	free(s->flt.fault_next);
	free(s->flt.crashes);
}
