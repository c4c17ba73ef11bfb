/* afile: a file written under a temporary name and renamed into place when complete. */
#ifndef KVSIM_AFILE_H
#define KVSIM_AFILE_H

#include <stddef.h>
#include <stdio.h>

/* A failed run never leaves a half-written result (docs/design.md, section 6): the file is
 * written as PATH.tmp.PID, flushed to the disk, and renamed to PATH only
 * when complete. What PATH already is decides where the bytes go:
 * - nothing, or a regular file: the temporary, then the rename over it;
 * - a symbolic link (a chain of them): the same, at the file the chain ends
 *   at (made if it is missing); the links stay as they are;
 * - a character or block device, a FIFO or a socket: written in place
 *   (such a file cannot be replaced, and must not be: /dev/null, a pipe);
 * - a directory: refused. */
struct afile {
	FILE *f;         /* open for writing between afile_open and afile_finish */
	char path[4200]; /* where it goes (the end of a chain of links) */
	char tmp[4200];  /* its temporary name; "" when there is none to remove */
	int in_place;    /* written in place (a device, a FIFO): no rename */
};

/* Creates path's temporary for writing (or opens a device in place). 0, or
 * -1 with err ("TMP: <strerror>"). */
int afile_open(struct afile *a, const char *path, char *err, size_t errlen);
/* Flushes the file to the disk and closes it, ready for afile_rename.
 * 0, or -1 with err ("PATH: <strerror>") and the temporary removed. */
int afile_finish(struct afile *a, char *err, size_t errlen);
/* Renames a finished file to its path. 0, or -1 with err and the
 * temporary removed. */
int afile_rename(struct afile *a, char *err, size_t errlen);
/* afile_finish, then afile_rename. */
int afile_commit(struct afile *a, char *err, size_t errlen);
/* Closes the file, if open, and removes its temporary, if any (after a
 * failure). Safe on a zeroed struct and after afile_commit. */
void afile_discard(struct afile *a);

/* A result set: files that appear together or not at all. Each is finished
 * (written and flushed) as it joins; afile_set_commit renames them all, in
 * the order they joined, only once every one is in. */
struct afile_set {
	struct afile *file; /* finished, awaiting their renames */
	size_t n, cap;
};

/* Finishes a and moves it into the set (a is left zeroed). 0, or -1 with
 * err and a's temporary removed. */
int afile_set_add(struct afile_set *set, struct afile *a, char *err, size_t errlen);
/* Writes text to path through a temporary that joins the set. 0 or -1. */
int afile_set_write(struct afile_set *set, const char *path, const char *text, char *err,
		    size_t errlen);
/* Renames every file of the set into place and empties it. 0, or -1 with
 * err (the rest of the set's temporaries removed). */
int afile_set_commit(struct afile_set *set, char *err, size_t errlen);
/* Removes every temporary of the set and frees it. Safe on a zeroed set
 * and after afile_set_commit. */
void afile_set_discard(struct afile_set *set);

#endif
