/* embedded: catalog and scenario files compiled into the binary. */
#ifndef KVSIM_EMBEDDED_H
#define KVSIM_EMBEDDED_H

/* NUL-terminated copies of model/catalog/{gpus,models,links,servers}.json and of
 * workloads/scenarios/default.json, generated at build time. */
extern const char kv_embedded_gpus[];
extern const char kv_embedded_models[];
extern const char kv_embedded_links[];
extern const char kv_embedded_servers[];
extern const char kv_embedded_default_scenario[];
/* The gnuplot scripts of plot/, fed to gnuplot by `kvsim plot`. */
extern const char kv_plot_common[];
extern const char kv_plot_latency_cdf[];
extern const char kv_plot_node_timeline[];
extern const char kv_plot_tokens[];
extern const char kv_plot_counts[];
extern const char kv_plot_latency_load[];

#endif
