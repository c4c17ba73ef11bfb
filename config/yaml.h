/* yaml: reads a YAML file (libyaml) into a cJSON tree, so that the cfg_ helpers read it. */
#ifndef KVSIM_CFG_YAML_H
#define KVSIM_CFG_YAML_H

#include <stddef.h>

struct cJSON;

/* Reads file's first YAML document: mappings become objects (keys must be
 * scalars, each once), sequences arrays; a plain scalar is null ("",
 * "~", "null"), a boolean ("true", "false"), a number (strtod takes all
 * of it; ".inf" and "inf" too) or else a string; a quoted scalar is a
 * string. Anchors and aliases are refused. Returns the tree (caller frees
 * with cJSON_Delete), or NULL with err "FILE:LINE: why" (line 1-based). */
struct cJSON *cfg_yaml_read(const char *file, char *err, size_t errlen);
/* The same from a buffer; name stands for the file in messages. */
struct cJSON *cfg_yaml_parse(const char *text, size_t len, const char *name, char *err,
			     size_t errlen);

#endif
