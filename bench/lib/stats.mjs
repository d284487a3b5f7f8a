// Small statistics helpers.

/** Median of a list of numbers (mean of the middle two for even lengths); NaN when empty. */
export function median(xs) {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export const min = (xs) => Math.min(...xs);
export const max = (xs) => Math.max(...xs);
