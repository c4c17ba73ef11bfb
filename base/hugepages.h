/* hugepages: back the simulator's heap with transparent huge pages. */
#ifndef KVSIM_HUGEPAGES_H
#define KVSIM_HUGEPAGES_H

#include <stddef.h>

/* The simulator's hot state (KV runs and their hashes, index tables,
 * requests, sessions) is tens to hundreds of MiB read at random, so most
 * of its cache misses are TLB misses too; in a virtual machine each is a
 * two-level page walk, and each first touch of a 4 KiB page a costly fault.
 * glibc's malloc backs its heap with 2 MiB pages when the tunable
 * glibc.malloc.hugetlb=1 is set (glibc 2.35 and later; older ones ignore
 * it), but tunables are read only when a process starts: so kvsim starts
 * itself once more with the tunable added to GLIBC_TUNABLES. The simulated
 * results do not depend on it (nothing reads addresses); only speed does. */

/* The GLIBC_TUNABLES value that adds glibc.malloc.hugetlb=1 to current
 * (NULL when unset), in out (n bytes). Returns 0, or -1 when there is
 * nothing to add (current sets glibc.malloc.hugetlb already, to any value)
 * or it does not fit. */
int hp_tunables(const char *current, char *out, size_t n);

/* First thing in main: unless KVSIM_HUGEPAGES=0, the tunable is set
 * already, this process was started by this call (KVSIM_REEXEC), or it runs
 * under valgrind, sets GLIBC_TUNABLES and executes /proc/self/exe with the
 * same argv. Returns only when it did not (or exec failed: then the
 * environment is as it was and the run goes on with 4 KiB pages). */
void hp_reexec(char **argv);

/* What this process asked of malloc, for the benchmark's header: e.g.
 * "glibc.malloc.hugetlb=1, THP madvise" or "off (KVSIM_HUGEPAGES=0)". */
void hp_describe(char *out, size_t n);

#endif
