/* fmt: number formatting for the CSV writers, byte for byte what printf
 * writes, without printf's general machinery (requests.csv can have
 * millions of rows). */
#ifndef KVSIM_FMT_H
#define KVSIM_FMT_H

#include <stdint.h>

/* Writes v in decimal at out (no terminator); returns the characters
 * written (at most 20). */
int fmt_u64(char *out, uint64_t v);
/* fmt_u64 for a signed value (printf's "%lld"). */
int fmt_i64(char *out, int64_t v);
/* Writes x as printf's "%.<digits>f" does (digits 0..9: the exact binary
 * value rounded to nearest, ties to even, as glibc rounds) at out, no
 * terminator; returns the characters written, or -1 (nothing written) for x
 * negative, not finite or at least 1e9, which the caller formats with
 * printf. */
int fmt_fixed(char *out, double x, int digits);

/* fmt_fixed with printf's output where it declines: writes at p (room for
 * 400 characters) and returns the end. */
char *fmt_put_fixed(char *p, double x, int digits);

#endif
