/* links: ports, flows, tier write-downs and offload. */
#ifndef KVSIM_LINKS_H
#define KVSIM_LINKS_H

#include <stdint.h>

#include "sim/sim_int.h"

/* Ports: node i has its NVLink port (2i) and its NIC port (2i + 1), each
 * its tp GPUs' links striped into one (cluster_cfg.nvlink_bytes_per_s,
 * nic_bytes_per_s); server k has its PCIe path to host DRAM (2N + 2k,
 * host_bytes_per_s) and its NVMe device (+1). */
static inline uint32_t links_port_nvlink(uint32_t i) { return 2 * i; }
static inline uint32_t links_port_nic(uint32_t i) { return 2 * i + 1; }
static inline uint32_t links_port_host(const struct sim *s, uint32_t k) { return 2 * s->n_nodes + 2 * k; }
static inline uint32_t links_port_nvme(const struct sim *s, uint32_t k) { return 2 * s->n_nodes + 2 * k + 1; }

/* The links' state (s->lk): the ports' flows, the servers' tiers, their
 * write-downs (a chore after each event); the nodes' evict hooks. After
 * the nodes; 0, or -1 when memory runs out. links_free hands back the
 * requests flows still name (after an error) and frees. */
int links_init(struct sim *s);
void links_free(struct sim *s);
/* Reschedules the end events of flows whose rates changed. */
void links_flows_changed(struct sim *s);
/* Node i's pool's configuration: its GPU's links and its server's. */
static inline const struct cluster_cfg *links_cl(const struct sim *s, uint32_t i)
{
	return &s->sc->pools[s->pool_of[i]].cl;
}

/* A flow of kind for r (or NULL) to target over ports; 0, or -1. */
int links_start_flow(struct sim *s, enum flow_kind kind, struct request *r, int32_t target,
		     const uint32_t *ports, uint32_t n_ports, double bytes, double latency_s);
/* The time a transfer over these ports would take if it started now. */
double links_estimate_s(const struct sim *s, const uint32_t *ports, uint32_t n, double bytes,
			double latency_s);
/* The link between nodes a and b, and the two ports it uses. */
const struct cat_link *links_between(const struct sim *s, uint32_t a, uint32_t b, uint32_t *ports);
/* The ports (up to 4) a KV transfer from node a to node b crosses on the
 * cluster's path (cluster.kv_transfer), their count and latency; returns
 * the link that sets its pace. */
const struct cat_link *links_kv_path(const struct sim *s, uint32_t a, uint32_t b, uint32_t *ports,
				     uint32_t *n, double *latency_s);
/* kv_pool.on_evict (ctx: struct evict_ctx) and pidx.on_evict (ctx: s). */
void links_on_hbm_evict(void *ctx, uint64_t hash);
void links_on_dram_evict(void *ctx, uint32_t server, uint64_t hash);
/* Sends the write-downs batched during the event. */
void links_flush_write_downs(struct sim *s);
/* Preemptive offload of node i's cold blocks above the watermark. */
void links_offload_cold(struct sim *s, uint32_t i);
/* Scales the ports of a server's nodes and its own (a link fault). */
void links_scale_server(struct sim *s, uint32_t server, double factor);
int links_ev_flow_stale(const struct sim *s, const struct event *ev);
void links_ev_flow(struct sim *s, const struct event *ev);

#endif
