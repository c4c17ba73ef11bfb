/* hfconfig: a model read from a Hugging Face config.json. */
#ifndef KVSIM_HFCONFIG_H
#define KVSIM_HFCONFIG_H

#include <stddef.h>

struct cat_model;

/* True when a cluster.model value names a config.json file (it ends in
 * ".json") rather than a catalog entry. */
int hf_is_config_path(const char *model);

/* Reads the config.json at path into m (every field set; m's name is the
 * file's folder, or the file name less ".json" when it is not called
 * config.json). Families: model_type llama, mistral, mixtral, qwen2,
 * qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3. Parameters and
 * active parameters are counted from the architecture (embeddings, every
 * layer's projections, biases and norms, routers, routed and shared
 * experts; DeepSeek's multi-token-prediction layers, which serve only
 * speculative decoding, are left out). 0, or -1 with err "FILE: KEY: what
 * was expected" (an unknown model_type lists the known ones). */
int hf_model_load(const char *path, struct cat_model *m, char *err, size_t errlen);

#endif
