/* registry: the workload generators compiled into kvsim. */
#ifndef KVSIM_WL_REGISTRY_H
#define KVSIM_WL_REGISTRY_H

#include "workloads/workload.h"

extern const struct wl_ops wl_open;
extern const struct wl_ops wl_chat;
extern const struct wl_ops wl_rag;
extern const struct wl_ops wl_agent;
extern const struct wl_ops wl_mix;
extern const struct wl_ops wl_trace;
extern const struct wl_ops wl_inference_perf;
extern const struct wl_ops wl_vllm_bench;

#endif
