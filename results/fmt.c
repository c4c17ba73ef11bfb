/* fmt: fast exact decimal formatting for the CSV writers. */
#include "results/fmt.h"

#include <math.h>
#include <stdio.h>

int fmt_u64(char *out, uint64_t v)
{
	char tmp[20];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (int i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

int fmt_fixed(char *out, double x, int digits)
{
	static const uint64_t pow10[10] = {1,	    10,	     100,      1000,	  10000,
					   100000, 1000000, 10000000, 100000000, 1000000000};
	if (!(x >= 0 && x < 1e9) || digits < 0 || digits > 9)
		return -1;
	/* x = m 2^e exactly (m < 2^53); x 10^d = m 10^d 2^e, m 10^d < 2^83. */
	int e2;
	double f = frexp(x, &e2);
	uint64_t m = (uint64_t)ldexp(f, 53);
	int sh = 53 - e2; /* x < 1e9 < 2^30: sh > 0 */
	unsigned __int128 p = (unsigned __int128)m * pow10[digits];
	uint64_t q;
	if (sh >= 127) {
		q = 0; /* below 2^-74 of a unit: rounds to 0 */
	} else {
		unsigned __int128 qq = p >> sh, rem = p - (qq << sh), half = (unsigned __int128)1
									      << (sh - 1);
		if (rem > half || (rem == half && (qq & 1)))
			qq++;
		q = (uint64_t)qq;
	}
	uint64_t ip = q / pow10[digits], fp = q % pow10[digits];
	int n = fmt_u64(out, ip);
	if (digits > 0) {
		out[n++] = '.';
		for (int i = digits; i-- > 0;) {
			out[n + i] = (char)('0' + fp % 10);
			fp /= 10;
		}
		n += digits;
	}
	return n;
}

char *fmt_put_fixed(char *p, double x, int digits)
{
	int n = fmt_fixed(p, x, digits);
	if (n < 0) { /* at most 319 characters for digits <= 9 (DBL_MAX) */
		n = snprintf(p, 400, "%.*f", digits, x);
		n = n < 400 ? n : 399;
	}
	return p + n;
}
