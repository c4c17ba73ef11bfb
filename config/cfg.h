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
/* JSON numbers are doubles: integers hold exactly up to 2^53, so cfg_int
 * takes [lo, hi] within [-CFG_INT_MAX, CFG_INT_MAX] (a wider bound is
 * narrowed to it, in the check and in the message alike). */
#define CFG_INT_MAX ((int64_t)1 << 53)
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
/* The most cfg_slurp reads of one file. */
#define CFG_SLURP_MAX ((size_t)64 << 20)
/* Reads a whole file (a regular file, a FIFO or a character device; at
 * most CFG_SLURP_MAX bytes) into a NUL-terminated buffer, or NULL with err
 * ("FILE: why"); caller frees. *len gets the length when len is not NULL. */
char *cfg_slurp(const char *file, size_t *len, char *err, size_t errlen);
/* Joins path and key into buf ("a.b" + "c" -> "a.b.c"); returns buf. */
const char *cfg_join(char *buf, size_t len, const char *path, const char *key);
/* What a JSON value is, for messages: "a number", "an array", ... */
const char *cfg_type_name(const struct cJSON *v);
/* Fails on the first string or key of the tree under v that is not UTF-8
 * (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF),
 * naming its JSON path (path names v; "" for the top level). What a
 * scenario names is written into JSON outputs, which must be UTF-8. */
int cfg_check_utf8(const struct cJSON *v, const char *path, char *err, size_t errlen);

/* The simulator's clock counts int64 nanoseconds. Every time it is given
 * (an instant or a span) is at most CFG_TIME_MAX_NS (4e18 ns, about 126
 * years), so that the sum of two still fits; any horizon (duration_s) is
 * far below it. */
#define CFG_TIME_MAX_NS 4000000000000000000LL
/* x units of ns_per_unit ns each (1e9: seconds, 1e6: milliseconds) as whole
 * ns, rounded: 0, or -1 when x * ns_per_unit is not a number in [0,
 * CFG_TIME_MAX_NS] (*ns untouched). For times read from input. */
int cfg_time_ns(double x, double ns_per_unit, int64_t *ns);
/* The same for a time derived from valid input (a draw from an unbounded
 * distribution, a span scaled up): past CFG_TIME_MAX_NS it is
 * CFG_TIME_MAX_NS, later than any horizon, which simulates alike; below 0
 * it is 0. */
int64_t cfg_time_ns_clamp(double x, double ns_per_unit);
/* a + b for times a, b >= 0, at most CFG_TIME_MAX_NS. */
int64_t cfg_time_add(int64_t a, int64_t b);

#endif
