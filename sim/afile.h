/* afile: a file written under a temporary name and renamed into place when complete. */
#ifndef KVSIM_AFILE_H
#define KVSIM_AFILE_H

#include <stddef.h>
#include <stdio.h>

/* A failed run never leaves a half-written result (DESIGN 6): the file is
 * PATH.tmp.PID until afile_commit renames it to PATH. */
struct afile {
	FILE *f;         /* open for writing between afile_open and commit/discard */
	char path[4200]; /* where it goes */
	char tmp[4200];  /* its temporary name; "" when there is none to remove */
};

/* Creates path's temporary for writing. 0, or -1 with err
 * ("TMP: cannot create"). */
int afile_open(struct afile *a, const char *path, char *err, size_t errlen);
/* Closes the file and renames it to its path. 0, or -1 with err
 * ("PATH: write failed") and the temporary removed. */
int afile_commit(struct afile *a, char *err, size_t errlen);
/* Closes the file, if open, and removes its temporary, if any (after a
 * failure). Safe on a zeroed struct and after afile_commit. */
void afile_discard(struct afile *a);

#endif
