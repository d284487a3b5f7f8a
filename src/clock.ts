let lastMs = -1;
let lastIso = '';

/**
 * `new Date(ms).toISOString()`, memoised for the last millisecond: under load many
 * events share a millisecond, and formatting a date costs microseconds.
 */
export function isoAt(ms: number): string {
  const whole = Math.floor(ms);
  if (whole !== lastMs) {
    lastMs = whole;
    lastIso = new Date(whole).toISOString();
  }
  return lastIso;
}
