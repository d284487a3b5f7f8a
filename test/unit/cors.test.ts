import { describe, expect, it } from 'vitest';
import { mergeVary } from '../../src/edge/cors.js';

// Vary merged with the CORS Origin (src/edge/cors.ts, docs/api.md "CORS").
describe('mergeVary', () => {
  it('adds Origin to what the answer varies on, each name once, case-insensitively', () => {
    expect(mergeVary(undefined, 'Origin')).toBe('Origin');
    expect(mergeVary('', 'Origin')).toBe('Origin');
    expect(mergeVary('Accept', 'Origin')).toBe('Accept, Origin');
    expect(mergeVary('Accept, origin', 'Origin')).toBe('Accept, origin');
    expect(mergeVary('Accept,Accept-Encoding ,', 'Origin')).toBe('Accept, Accept-Encoding, Origin');
  });

  it('keeps * alone', () => {
    expect(mergeVary('*', 'Origin')).toBe('*');
    expect(mergeVary('Accept, *', 'Origin')).toBe('*');
  });
});
