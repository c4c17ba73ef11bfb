/* embedded: catalog and scenario files compiled into the binary. */
#ifndef KVSIM_EMBEDDED_H
#define KVSIM_EMBEDDED_H

/* NUL-terminated copies of sim/catalog/{gpus,models,links}.json and of
 * workloads/scenarios/default.json, generated at build time. */
extern const char kv_embedded_gpus[];
extern const char kv_embedded_models[];
extern const char kv_embedded_links[];
extern const char kv_embedded_default_scenario[];

#endif
