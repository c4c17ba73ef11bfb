/* fits: `kvsim calibrate`: the catalog's fits to measured operator profiles and published figures, printed. */
#ifndef KVSIM_FITS_H
#define KVSIM_FITS_H

/* For every GPU of the built-in catalog with a profile folder under dir
 * (only: that folder alone; NULL: all), the first GPU naming each: the
 * roofline fitted to its linear operators, its all-reduce lines, its
 * attention per backend; then, without only, the engine overhead and the
 * FP8 efficiencies fitted to the published figures. Prints the fitted
 * values and their errors, or (json) the values alone as one JSON object,
 * on stdout. Returns 0, 2 for bad input (a missing folder, no GPU naming
 * only), 3 for a failed fit, after reporting on stderr as "kvsim
 * calibrate: ...". */
int fits_report(const char *dir, const char *only, int json);

#endif
