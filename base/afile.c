/* afile: a file written under a temporary name and renamed into place when complete. */
#include "base/afile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Follows path's chain of symbolic links to the name it ends at (which may
 * not exist yet) into out. 0, or -1 with err. */
static int afile_resolve(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
	char link[4200];
	if (snprintf(out, outlen, "%s", path) >= (int)outlen)
		goto toolong;
	for (int hops = 0;; hops++) {
		struct stat st;
		if (lstat(out, &st) != 0 || !S_ISLNK(st.st_mode))
			return 0;
		ssize_t n = hops < 40 ? readlink(out, link, sizeof link - 1) : (errno = ELOOP, -1);
		if (n < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
		link[n] = 0;
		/* A relative target is relative to the link's own folder. */
		char *slash = link[0] == '/' ? NULL : strrchr(out, '/');
		size_t keep = slash ? (size_t)(slash - out) + 1 : 0;
		if (keep + (size_t)n + 1 > outlen)
			goto toolong;
		memcpy(out + keep, link, (size_t)n + 1);
	}
toolong:
	snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
	return -1;
}

int afile_open(struct afile *a, const char *path, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	struct stat st;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
			return -1;
		}
		/* A device, a FIFO or a socket: written in place, never replaced. */
		snprintf(a->path, sizeof a->path, "%s", path);
		a->in_place = 1;
		a->f = fopen(path, "w");
		if (!a->f) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (afile_resolve(path, a->path, sizeof a->path, err, errlen))
		return -1;
	if (snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", a->path, (long)getpid()) >=
	    (int)sizeof a->tmp) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
		a->tmp[0] = 0;
		return -1;
	}
	a->f = fopen(a->tmp, "w");
	if (!a->f) {
		snprintf(err, errlen, "%s: %s", a->tmp, strerror(errno));
		a->tmp[0] = 0;
		return -1;
	}
	return 0;
}

int afile_finish(struct afile *a, char *err, size_t errlen)
{
	if (!a->f)
		return 0;
	/* The first error wins: a write that failed earlier (EFBIG, ENOSPC)
	 * fails again when the buffer is flushed, with its reason. */
	int why = fflush(a->f) != 0 ? errno : ferror(a->f) ? EIO : 0;
	if (!why && !a->in_place && fsync(fileno(a->f)) != 0)
		why = errno;
	if (fclose(a->f) != 0 && !why)
		why = errno;
	a->f = NULL;
	if (why) {
		snprintf(err, errlen, "%s: %s", a->path, strerror(why));
		afile_discard(a);
		return -1;
	}
	return 0;
}

int afile_rename(struct afile *a, char *err, size_t errlen)
{
	if (a->in_place || !a->tmp[0])
		return 0;
	if (rename(a->tmp, a->path) != 0) {
		snprintf(err, errlen, "%s: %s", a->path, strerror(errno));
		afile_discard(a);
		return -1;
	}
	a->tmp[0] = 0;
	return 0;
}

int afile_commit(struct afile *a, char *err, size_t errlen)
{
	return afile_finish(a, err, errlen) || afile_rename(a, err, errlen) ? -1 : 0;
}

void afile_discard(struct afile *a)
{
	if (a->f)
		fclose(a->f);
	a->f = NULL;
	if (a->tmp[0])
		unlink(a->tmp);
	a->tmp[0] = 0;
}

int afile_set_add(struct afile_set *set, struct afile *a, char *err, size_t errlen)
{
	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 4;
		struct afile *f = realloc(set->file, cap * sizeof *f);
		if (!f) {
			snprintf(err, errlen, "%s: out of memory", a->path);
			afile_discard(a);
			return -1;
		}
		set->file = f;
		set->cap = cap;
	}
	if (afile_finish(a, err, errlen))
		return -1;
	set->file[set->n++] = *a;
	memset(a, 0, sizeof *a);
	return 0;
}

int afile_set_write(struct afile_set *set, const char *path, const char *text, char *err,
		    size_t errlen)
{
	struct afile a;
	if (afile_open(&a, path, err, errlen))
		return -1;
	fputs(text, a.f);
	return afile_set_add(set, &a, err, errlen);
}

int afile_set_commit(struct afile_set *set, char *err, size_t errlen)
{
	int rc = 0;
	for (size_t i = 0; i < set->n && rc == 0; i++)
		rc = afile_rename(&set->file[i], err, errlen);
	afile_set_discard(set); /* after a failure, the temporaries not renamed */
	return rc;
}

void afile_set_discard(struct afile_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		afile_discard(&set->file[i]);
	free(set->file);
	memset(set, 0, sizeof *set);
}
