/* fmt: fast exact decimal formatting for the CSV writers. */
#include "results/fmt.h"

#include <stdio.h>
#include <string.h>

/* "00" to "99" */
static const char two_digits[201] = "00010203040506070809101112131415161718192021222324"
				    "25262728293031323334353637383940414243444546474849"
				    "50515253545556575859606162636465666768697071727374"
				    "75767778798081828384858687888990919293949596979899";

int fmt_u64(char *out, uint64_t v)
{
	char tmp[20], *p = tmp + sizeof tmp;
	while (v >= 100) { /* two digits a division */
		uint64_t q = v / 100;
		p -= 2;
		memcpy(p, two_digits + 2 * (v - 100 * q), 2);
		v = q;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, two_digits + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	int n = (int)(tmp + sizeof tmp - p);
	for (int i = 0; i < n; i++)
		out[i] = p[i];
	return n;
}

int fmt_i64(char *out, int64_t v)
{
	if (v >= 0)
		return fmt_u64(out, (uint64_t)v);
	out[0] = '-';
	return 1 + fmt_u64(out + 1, 0 - (uint64_t)v);
}

int fmt_fixed(char *out, double x, int digits)
{
	static const uint64_t pow10[10] = {1,	    10,	     100,      1000,	  10000,
					   100000, 1000000, 10000000, 100000000, 1000000000};
	if (!(x >= 0 && x < 1e9) || digits < 0 || digits > 9)
		return -1;
	/* x = m 2^-sh exactly (m < 2^53, from the IEEE 754 fields); x 10^d =
	 * m 10^d 2^-sh, m 10^d < 2^83. */
	uint64_t bits;
	memcpy(&bits, &x, sizeof bits);
	int be = (int)(bits >> 52); /* x >= 0: no sign bit */
	uint64_t m = bits & ((1ULL << 52) - 1);
	int sh;
	if (be == 0) {
		sh = 1074; /* zero or subnormal: m 2^-1074 */
	} else {
		m |= 1ULL << 52;
		sh = 1075 - be; /* x < 1e9 < 2^30: sh > 22 */
	}
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
		int i = digits; /* fp's digits right to left, two at a time */
		for (; i >= 2; i -= 2) {
			uint64_t hi = fp / 100;
			memcpy(out + n + i - 2, two_digits + 2 * (fp - 100 * hi), 2);
			fp = hi;
		}
		if (i)
			out[n] = (char)('0' + fp);
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
