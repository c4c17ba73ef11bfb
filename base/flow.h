/* flow: transfers as flows over ports, sharing bandwidth max-min fairly. */
#ifndef KVSIM_FLOW_H
#define KVSIM_FLOW_H

#include <stdint.h>

/* A port is a link end with a capacity in bytes/s (a node's NVLink port,
 * its NIC, a server's PCIe path to DRAM, its NVMe device). A flow crosses
 * up to FLOW_MAX_PORTS ports; at every change (a flow starts or ends, a
 * capacity changes) the rates are recomputed by progressive filling, so
 * each flow gets its max-min fair share: two flows alone on one port each
 * get half of it. A flow delivers latency after its last byte leaves. */
#define FLOW_MAX_PORTS 4

struct flow {
	double bytes, left; /* total, still to send */
	double rate;        /* bytes/s now */
	int64_t start_ns, latency_ns;
	uint32_t ports[FLOW_MAX_PORTS], n_ports;
	uint64_t ev_seq;  /* the owner's handle for the flow's end event */
	int kind;         /* the owner's: what the flow is for */
	void *ptr;        /* the owner's */
	int32_t a, b;     /* the owner's */
	int live;
	uint32_t next_free;
	uint32_t slot;    /* index in the active list */
};

struct flownet {
	uint32_t n_ports;
	double *base, *cap; /* per port: nominal and current (after faults) bytes/s */
	struct flow *f;
	uint32_t n_f, cap_f, free_f;
	uint32_t *active, n_active;
	int64_t last_ns; /* time of the last advance */
	/* scratch for the fair-share computation */
	double *left;
	uint32_t *count;
	uint8_t *frozen;
	/* Ports touched since the last update (a flow came or went, a capacity
	 * changed): only the flows connected to them through shared ports can
	 * get new rates; the others keep theirs. */
	uint8_t *touched;
	uint32_t *touched_list, n_touched;
	uint32_t *sel; /* scratch: active slots of the flows recomputed */
	double bytes_total;
};

int flow_init(struct flownet *n, uint32_t n_ports);
void flow_free(struct flownet *n);
/* Sets a port's nominal capacity (also its current one). */
void flow_set_capacity(struct flownet *n, uint32_t port, double bytes_per_s);
/* Scales a port's capacity to factor x nominal (link degradation). Call
 * flow_update afterwards. */
void flow_scale(struct flownet *n, uint32_t port, double factor);
/* Adds a flow; returns its id, or UINT32_MAX when memory runs out. Call
 * flow_update afterwards. bytes > 0. */
uint32_t flow_add(struct flownet *n, int64_t now_ns, const uint32_t *ports, uint32_t n_ports,
		  double bytes, int64_t latency_ns);
/* The flow's bytes are all sent: it leaves its ports. Call flow_update. */
void flow_remove(struct flownet *n, uint32_t id);
/* Brings every flow's progress to now at the old rates, then computes the
 * new fair rates. changed[] (n_active entries, may be NULL) gets the ids of
 * flows whose rate changed (their end times moved); returns their count. */
uint32_t flow_update(struct flownet *n, int64_t now_ns, uint32_t *changed);
/* When the flow's last byte leaves at the current rates. */
int64_t flow_end_ns(const struct flownet *n, uint32_t id, int64_t now_ns);
/* The rate a new flow over these ports would get now (for estimates). */
double flow_estimate_rate(const struct flownet *n, const uint32_t *ports, uint32_t n_ports);

#endif
