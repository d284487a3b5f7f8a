import { describe, expect, it } from 'vitest';
import { parseFilter, parseListQuery } from '../../src/services/db/filters.js';
import { likeToGlob } from '../../src/services/db/list-query.js';

const q = (s: string) => parseListQuery(new URLSearchParams(s));

describe('parseFilter', () => {
  it.each([
    ['name.eq.bob', ['name'], 'eq', [{ text: 'bob', quoted: false }]],
    ['address.city.eq.Paris', ['address', 'city'], 'eq', [{ text: 'Paris', quoted: false }]],
    ['a.eq.x.y.z', ['a'], 'eq', [{ text: 'x.y.z', quoted: false }]],
    ['a.eq.', ['a'], 'eq', [{ text: '', quoted: false }]],
    ['a.eq."1"', ['a'], 'eq', [{ text: '1', quoted: true }]],
    ['a.neq.1', ['a'], 'neq', [{ text: '1', quoted: false }]],
    ['a.gte.1', ['a'], 'gte', [{ text: '1', quoted: false }]],
    ['a.ilike.*x*', ['a'], 'ilike', [{ text: '*x*', quoted: false }]],
    ['a.is.null', ['a'], 'is', [{ text: 'null', quoted: false }]],
    ['a.contains.["x"]', ['a'], 'contains', [{ text: '["x"]', quoted: false }]],
    ['a.in.(1,"b,c",d)', ['a'], 'in', [{ text: '1', quoted: false }, { text: 'b,c', quoted: true }, { text: 'd', quoted: false }]],
  ])('%s', (s, field, op, values) => {
    expect(parseFilter(s)).toEqual({ field, op, values });
  });

  it.each(['name', 'name.eq', 'name.equals.1', '.eq.1', 'a b.eq.1', "a'.eq.1", 'a.in.1,2', 'a.in.()', 'a.is.maybe', 'a.is."null"', '1a.eq.1', 'a..b.eq.1'])(
    '%s is rejected',
    (s) => {
      expect(() => parseFilter(s)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    },
  );
});

describe('parseListQuery', () => {
  it('defaults', () => {
    expect(q('')).toEqual({ filters: [], or: [], select: null, order: [], limit: 100, offset: 0, count: false });
  });

  it('caps limit at 1000, reads offset and count', () => {
    expect(q('limit=100000&offset=7&count=exact')).toMatchObject({ limit: 1000, offset: 7, count: true });
  });

  it('order items with direction and nulls', () => {
    expect(q('order=a.desc,b.c.asc.nullsfirst,d,e.nullslast').order).toEqual([
      { field: ['a'], desc: true, nulls: null },
      { field: ['b', 'c'], desc: false, nulls: 'first' },
      { field: ['d'], desc: false, nulls: null },
      { field: ['e'], desc: false, nulls: 'last' },
    ]);
  });

  it('or groups split at top-level commas', () => {
    expect(q('or=(a.eq.1,b.in.(2,3))').or).toEqual([
      [
        { field: ['a'], op: 'eq', values: [{ text: '1', quoted: false }] },
        { field: ['b'], op: 'in', values: [{ text: '2', quoted: false }, { text: '3', quoted: false }] },
      ],
    ]);
  });

  it('select names and paths', () => {
    expect(q('select=a,b.c').select).toEqual([['a'], ['b', 'c']]);
    expect(q('select=*').select).toBeNull();
  });

  it.each(['limit=-1', 'limit=1e3', 'offset=x', 'count=estimated', 'other=1', 'or=a.eq.1', 'or=(a.eq.1', 'or=()', 'select=a,,b', 'order=a;b', 'or=(a.eq."x)'])(
    '%s is rejected',
    (s) => {
      expect(() => q(s)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    },
  );
});

describe('likeToGlob', () => {
  it.each([
    ['%a_', '*a?'],
    ['*x*', '*x*'],
    ['a[b]?', 'a[[]b][?]'],
  ])('%s → %s', (like, glob) => expect(likeToGlob(like)).toBe(glob));
});
