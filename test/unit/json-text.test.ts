import { describe, expect, it } from 'vitest';
import { jsonValue } from '../../src/json-text.js';

describe('jsonValue', () => {
  const values: unknown[] = [
    '',
    'plain',
    'quote " inside',
    'back\\slash',
    'new\nline',
    'tab\tand \u0000 nul and \u001f unit separator',
    '\u007f del is not escaped',
    'emoji 😀 pair',
    'lone \ud800 high',
    'lone \udc00 low',
    'ünïcödé ✓',
    '</script>',
    0,
    -0,
    1.5,
    -42,
    1e21,
    2 ** 53 + 2,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    true,
    false,
    null,
    { a: [1, 'x'] },
    [1, 2],
  ];

  it.each(values.map((v) => [v]))('writes %j exactly as JSON.stringify does', (v) => {
    expect(jsonValue(v)).toBe(JSON.stringify(v));
  });

  it('writes undefined (a missing column) as null', () => {
    expect(jsonValue(undefined)).toBe('null');
  });
});
