/* yaml: a YAML document as a cJSON tree (libyaml's event parser). */
#include "config/yaml.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "config/cfg.h"

/* Nesting deeper than this is refused (the parser recurses once a level). */
#define YAML_MAX_DEPTH 64

struct yreader {
	yaml_parser_t p;
	const char *name;
	char *err;
	size_t errlen;
};

static int y_fail(struct yreader *y, const yaml_mark_t *m, const char *why)
{
	snprintf(y->err, y->errlen, "%s:%zu: %s", y->name, (size_t)m->line + 1, why);
	return -1;
}

static int y_next(struct yreader *y, yaml_event_t *ev)
{
	if (yaml_parser_parse(&y->p, ev))
		return 0;
	const char *what = y->p.problem ? y->p.problem : "malformed YAML";
	snprintf(y->err, y->errlen, "%s:%zu: %s%s%s", y->name, (size_t)y->p.problem_mark.line + 1,
		 what, y->p.context ? " " : "", y->p.context ? y->p.context : "");
	return -1;
}

static cJSON *y_scalar(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length;
	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || strlen(s) != n)
		return cJSON_CreateString(s);
	if (!n || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
		return cJSON_CreateNull();
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
		return cJSON_CreateTrue();
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
		return cJSON_CreateFalse();
	if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, "inf"))
		return cJSON_CreateNumber(INFINITY);
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (end != s && !*end && errno != ERANGE && (isfinite(x)) &&
	    strspn(s, "+-0123456789.eE") == n)
		return cJSON_CreateNumber(x);
	return cJSON_CreateString(s);
}

static cJSON *y_node(struct yreader *y, yaml_event_t *ev, int depth);

/* Reads the items of a sequence or mapping whose start event was just
 * read, up to its end event, into out. */
static int y_items(struct yreader *y, cJSON *out, int mapping, int depth)
{
	for (;;) {
		yaml_event_t ev;
		if (y_next(y, &ev))
			return -1;
		if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		char key[256];
		if (mapping) {
			if (ev.type != YAML_SCALAR_EVENT) {
				int rc = y_fail(y, &ev.start_mark, "a mapping key must be a scalar");
				yaml_event_delete(&ev);
				return rc;
			}
			snprintf(key, sizeof key, "%s", (const char *)ev.data.scalar.value);
			if (cJSON_GetObjectItemCaseSensitive(out, key)) {
				char why[320];
				snprintf(why, sizeof why, "duplicate key \"%s\"", key);
				int rc = y_fail(y, &ev.start_mark, why);
				yaml_event_delete(&ev);
				return rc;
			}
			yaml_event_delete(&ev);
			if (y_next(y, &ev))
				return -1;
		}
		cJSON *v = y_node(y, &ev, depth + 1);
		yaml_event_delete(&ev);
		if (!v)
			return -1;
		if (mapping ? !cJSON_AddItemToObject(out, key, v) : !cJSON_AddItemToArray(out, v)) {
			cJSON_Delete(v);
			snprintf(y->err, y->errlen, "out of memory");
			return -1;
		}
	}
}

/* The value that starts with event ev (which the caller deletes). */
static cJSON *y_node(struct yreader *y, yaml_event_t *ev, int depth)
{
	if (depth > YAML_MAX_DEPTH) {
		y_fail(y, &ev->start_mark, "nested too deeply");
		return NULL;
	}
	cJSON *v = NULL;
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		v = y_scalar(ev);
		break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		int mapping = ev->type == YAML_MAPPING_START_EVENT;
		v = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
		if (v && y_items(y, v, mapping, depth)) {
			cJSON_Delete(v);
			return NULL;
		}
		break;
	}
	case YAML_ALIAS_EVENT:
		y_fail(y, &ev->start_mark, "aliases (*name) are not supported");
		return NULL;
	default:
		y_fail(y, &ev->start_mark, "unexpected YAML event");
		return NULL;
	}
	if (!v)
		snprintf(y->err, y->errlen, "out of memory");
	return v;
}

cJSON *cfg_yaml_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
	struct yreader y = {.name = name, .err = err, .errlen = errlen};
	if (!yaml_parser_initialize(&y.p)) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&y.p, (const unsigned char *)text, len);
	cJSON *root = NULL;
	yaml_event_t ev;
	/* stream start, then a document (or none: an empty file) */
	for (;;) {
		if (y_next(&y, &ev))
			goto out;
		yaml_event_type_t t = ev.type;
		if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) {
			yaml_event_delete(&ev);
			continue;
		}
		if (t == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			snprintf(err, errlen, "%s:1: empty YAML document", name);
			goto out;
		}
		if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
		    ev.type == YAML_MAPPING_START_EVENT) {
			root = y_node(&y, &ev, 0);
			yaml_event_delete(&ev);
			break;
		}
		y_fail(&y, &ev.start_mark, "unexpected YAML event");
		yaml_event_delete(&ev);
		goto out;
	}
	if (!root)
		goto out;
	/* the document's end; a second document is refused */
	for (;;) {
		if (y_next(&y, &ev)) {
			cJSON_Delete(root);
			root = NULL;
			goto out;
		}
		yaml_event_type_t t = ev.type;
		yaml_mark_t m = ev.start_mark;
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT)
			break;
		if (t == YAML_DOCUMENT_START_EVENT) {
			y_fail(&y, &m, "only one YAML document is read");
			cJSON_Delete(root);
			root = NULL;
			goto out;
		}
	}
out:
	yaml_parser_delete(&y.p);
	return root;
}

cJSON *cfg_yaml_read(const char *file, char *err, size_t errlen)
{
	size_t len;
	char *text = cfg_slurp(file, &len, err, errlen);
	if (!text)
		return NULL;
	cJSON *root = cfg_yaml_parse(text, len, file, err, errlen);
	free(text);
	return root;
}
