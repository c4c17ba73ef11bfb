/* flow: max-min fair bandwidth sharing by progressive filling. */
#include "base/flow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

int flow_init(struct flownet *n, uint32_t n_ports)
{
	memset(n, 0, sizeof *n);
	n->n_ports = n_ports;
	n->free_f = NIL;
	n->base = calloc(n_ports, sizeof *n->base);
	n->cap = calloc(n_ports, sizeof *n->cap);
	n->left = calloc(n_ports, sizeof *n->left);
	n->count = calloc(n_ports, sizeof *n->count);
	n->touched = calloc(n_ports, 1);
	n->touched_list = calloc(n_ports, sizeof *n->touched_list);
	if (!n->base || !n->cap || !n->left || !n->count || !n->touched || !n->touched_list) {
		flow_free(n);
		return -1;
	}
	return 0;
}

void flow_free(struct flownet *n)
{
	free(n->base);
	free(n->cap);
	free(n->left);
	free(n->count);
	free(n->f);
	free(n->active);
	free(n->frozen);
	free(n->touched);
	free(n->touched_list);
	free(n->sel);
	memset(n, 0, sizeof *n);
}

void flow_set_capacity(struct flownet *n, uint32_t port, double bytes_per_s)
{
	n->base[port] = n->cap[port] = bytes_per_s;
}

static void touch(struct flownet *n, uint32_t port)
{
	if (!n->touched[port]) {
		n->touched[port] = 1;
		n->touched_list[n->n_touched++] = port;
	}
}

void flow_scale(struct flownet *n, uint32_t port, double factor)
{
	n->cap[port] = n->base[port] * factor;
	touch(n, port);
}

uint32_t flow_add(struct flownet *n, int64_t now_ns, const uint32_t *ports, uint32_t n_ports,
		  double bytes, int64_t latency_ns)
{
	uint32_t id;
	if (n->free_f != NIL) {
		id = n->free_f;
		n->free_f = n->f[id].next_free;
	} else {
		if (n->n_f == n->cap_f) {
			uint32_t cap = n->cap_f ? 2 * n->cap_f : 64;
			struct flow *f = realloc(n->f, cap * sizeof *f);
			if (!f)
				return NIL;
			n->f = f;
			uint32_t *a = realloc(n->active, cap * sizeof *a);
			if (!a)
				return NIL;
			n->active = a;
			uint8_t *z = realloc(n->frozen, cap);
			if (!z)
				return NIL;
			n->frozen = z;
			uint32_t *sl = realloc(n->sel, cap * sizeof *sl);
			if (!sl)
				return NIL;
			n->sel = sl;
			n->cap_f = cap;
		}
		id = n->n_f++;
	}
	struct flow *f = &n->f[id];
	memset(f, 0, sizeof *f);
	f->bytes = f->left = bytes;
	f->start_ns = now_ns;
	f->latency_ns = latency_ns;
	f->n_ports = n_ports > FLOW_MAX_PORTS ? FLOW_MAX_PORTS : n_ports;
	memcpy(f->ports, ports, f->n_ports * sizeof *ports);
	for (uint32_t p = 0; p < f->n_ports; p++)
		touch(n, f->ports[p]);
	f->live = 1;
	f->slot = n->n_active;
	n->active[n->n_active++] = id;
	n->bytes_total += bytes;
	return id;
}

void flow_remove(struct flownet *n, uint32_t id)
{
	struct flow *f = &n->f[id];
	for (uint32_t p = 0; p < f->n_ports; p++)
		touch(n, f->ports[p]);
	uint32_t last = n->active[--n->n_active];
	n->active[f->slot] = last;
	n->f[last].slot = f->slot;
	f->live = 0;
	f->next_free = n->free_f;
	n->free_f = id;
}

/* Progressive filling: every unfrozen flow's rate rises together until a
 * port is saturated; the flows through it freeze at that share; repeat.
 * Only over the flows connected (through shared ports) to a port touched
 * since the last update: a connected group's rates depend on nothing
 * outside it, and the operations on its ports come in the same order
 * whoever else is computed, so the others' rates stand as they are (and
 * identical to recomputing them). O(active) to advance and mark, plus
 * O(group x ports x rounds). */
uint32_t flow_update(struct flownet *n, int64_t now_ns, uint32_t *changed)
{
	double dt = (double)(now_ns - n->last_ns) * 1e-9;
	n->last_ns = now_ns;
	for (uint32_t k = 0; k < n->n_active; k++) {
		struct flow *f = &n->f[n->active[k]];
		f->left -= f->rate * dt;
		if (f->left < 0)
			f->left = 0;
	}
	if (n->n_touched == 0)
		return 0;
	/* The flows connected to a touched port through shared ports: marking
	 * spreads over the ports of each flow reached until nothing changes. */
	for (uint32_t k = 0; k < n->n_active; k++)
		n->frozen[k] = 1;
	for (int grew = 1; grew;) {
		grew = 0;
		for (uint32_t k = 0; k < n->n_active; k++) {
			if (!n->frozen[k])
				continue;
			const struct flow *f = &n->f[n->active[k]];
			uint32_t p = 0;
			while (p < f->n_ports && !n->touched[f->ports[p]])
				p++;
			if (p == f->n_ports)
				continue;
			n->frozen[k] = 0;
			for (p = 0; p < f->n_ports; p++)
				touch(n, f->ports[p]);
			grew = 1;
		}
	}
	uint32_t n_sel = 0;
	for (uint32_t k = 0; k < n->n_active; k++)
		if (!n->frozen[k])
			n->sel[n_sel++] = k;
	for (uint32_t i = 0; i < n_sel; i++) {
		const struct flow *f = &n->f[n->active[n->sel[i]]];
		for (uint32_t p = 0; p < f->n_ports; p++) {
			n->left[f->ports[p]] = n->cap[f->ports[p]];
			n->count[f->ports[p]] = 0;
		}
	}
	for (uint32_t i = 0; i < n_sel; i++) {
		const struct flow *f = &n->f[n->active[n->sel[i]]];
		for (uint32_t p = 0; p < f->n_ports; p++)
			n->count[f->ports[p]]++;
	}
	uint32_t unfrozen = n_sel, n_changed = 0;
	while (unfrozen > 0) {
		/* The bottleneck: the port with the least capacity per flow. */
		double share = INFINITY;
		uint32_t port = NIL;
		for (uint32_t i = 0; i < n_sel; i++) {
			uint32_t k = n->sel[i];
			if (n->frozen[k])
				continue;
			const struct flow *f = &n->f[n->active[k]];
			for (uint32_t p = 0; p < f->n_ports; p++) {
				uint32_t q = f->ports[p];
				double s = n->left[q] / n->count[q];
				if (s < share || (s == share && q < port)) {
					share = s;
					port = q;
				}
			}
		}
		if (share < 0)
			share = 0;
		for (uint32_t i = 0; i < n_sel; i++) {
			uint32_t k = n->sel[i];
			if (n->frozen[k])
				continue;
			struct flow *f = &n->f[n->active[k]];
			int through = 0;
			for (uint32_t p = 0; p < f->n_ports; p++)
				through |= f->ports[p] == port;
			if (!through)
				continue;
			n->frozen[k] = 1;
			unfrozen--;
			for (uint32_t p = 0; p < f->n_ports; p++) {
				n->left[f->ports[p]] -= share;
				n->count[f->ports[p]]--;
			}
			if (f->rate != share && changed)
				changed[n_changed++] = n->active[k];
			else if (f->rate != share)
				n_changed++;
			f->rate = share;
		}
	}
	for (uint32_t i = 0; i < n->n_touched; i++)
		n->touched[n->touched_list[i]] = 0;
	n->n_touched = 0;
	return n_changed;
}

int64_t flow_end_ns(const struct flownet *n, uint32_t id, int64_t now_ns)
{
	const struct flow *f = &n->f[id];
	if (f->rate <= 0)
		return INT64_MAX;
	double t = ceil(f->left / f->rate * 1e9);
	if (t > 9e18)
		return INT64_MAX;
	return now_ns + (int64_t)t;
}

double flow_estimate_rate(const struct flownet *n, const uint32_t *ports, uint32_t n_ports)
{
	double best = INFINITY;
	for (uint32_t p = 0; p < n_ports; p++) {
		uint32_t users = 1;
		for (uint32_t k = 0; k < n->n_active; k++) {
			const struct flow *f = &n->f[n->active[k]];
			for (uint32_t j = 0; j < f->n_ports; j++)
				users += f->ports[j] == ports[p];
		}
		double r = n->cap[ports[p]] / users;
		if (r < best)
			best = r;
	}
	return best;
}
