/* cfg: reading scenario JSON with errors that name the JSON path. */
#ifndef KVSIM_CFG_H
#define KVSIM_CFG_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct dist;

/* Fails on an object anywhere in v (the tree at path, "" at the top) that
 * gives one key twice: cJSON keeps both and lookups see the first, so the
 * second would be silently ignored. err names the key's JSON path.
 * O(keys log keys) per object. 0, or -1 with err. */
int cfg_check_unique_keys(const struct cJSON *v, const char *path, char *err, size_t errlen);

/* Every reader below leaves *out untouched when the key is absent (so the
 * caller's default stands) and returns 0; on a present but bad value it
 * writes "PATH.KEY: expected ..., got ..." into err and returns -1. */

/* Fails on any key of obj not in the NULL-terminated allowed list. Keys that
 * start with '_' (comments) are always allowed. obj may be NULL. */
int cfg_check_keys(const struct cJSON *obj, const char *path, const char *const *allowed, char *err,
		   size_t errlen);
/* Fails unless obj is NULL or a JSON object. */
int cfg_expect_object(const struct cJSON *obj, const char *path, char *err, size_t errlen);
int cfg_number(const struct cJSON *obj, const char *path, const char *key, double lo, double hi,
	       double *out, char *err, size_t errlen);
int cfg_int(const struct cJSON *obj, const char *path, const char *key, int64_t lo, int64_t hi,
	    int64_t *out, char *err, size_t errlen);
int cfg_bool(const struct cJSON *obj, const char *path, const char *key, int *out, char *err,
	     size_t errlen);
/* Copies a string value into out (outlen bytes). */
int cfg_string(const struct cJSON *obj, const char *path, const char *key, char *out, size_t outlen,
	       char *err, size_t errlen);
/* A string that must be one of the NULL-terminated choices; *out is its index. */
int cfg_enum(const struct cJSON *obj, const char *path, const char *key, const char *const *choices,
	     int *out, char *err, size_t errlen);
/* A distribution object ({"dist": KIND, ...}); replaces *out (freeing the
 * old one) only on success. token_count requires values that make sense as
 * token counts (positive). */
int cfg_dist(const struct cJSON *obj, const char *path, const char *key, int token_count,
	     struct dist *out, char *err, size_t errlen);
/* Joins path and key into buf ("a.b" + "c" -> "a.b.c"); returns buf. */
/* Reads a whole file into a NUL-terminated buffer, or NULL with err
 * ("FILE: why"); caller frees. *len gets the length when len is not NULL. */
char *cfg_slurp(const char *file, size_t *len, char *err, size_t errlen);
const char *cfg_join(char *buf, size_t len, const char *path, const char *key);

#endif
