import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { SchemaLookup } from '../../src/sql/pg/types.js';

// The translation cache of raw SQL (docs/sql.md): 500 SQL texts (least recently used dropped,
// a tenth at once), the 4 newest cache keys (project and schema version) per text, texts up
// to 16 KiB. The cache is per module: this file imports the translator afresh (unit files share
// a process, vitest.config.ts), so it starts with the cache empty; the size test runs first.
let cachedTranslation: typeof import('../../src/sql/pg/translate.js').cachedTranslation;
let translate: typeof import('../../src/sql/pg/translate.js').translate;
beforeAll(async () => {
  vi.resetModules();
  await (await import('../../src/sql/pg/parse.js')).loadParser();
  ({ cachedTranslation, translate } = await import('../../src/sql/pg/translate.js'));
});

const schema: SchemaLookup = (t) =>
  t === 'todos'
    ? [
        { name: 'id', type: 'uuid', pk: true },
        { name: 'title', type: 'text' },
      ]
    : null;

describe('the translation cache', () => {
  it('holds 500 SQL texts; the 501st drops the 50 least recently used', () => {
    const text = (i: number): string => `select title from todos where title = 'n${i}'`;
    const kept = (i: number): boolean => cachedTranslation(text(i), 'p:1') !== undefined;
    const all = Array.from({ length: 500 }, (_, i) => translate(text(i), schema, 'p:1'));
    expect(all.map((_, i) => kept(i))).toEqual(Array(500).fill(true));
    // reading text 0 makes it the most recently used
    expect(cachedTranslation(text(0), 'p:1')).toBe(all[0]);
    translate(text(500), schema, 'p:1');
    const after = Array.from({ length: 501 }, (_, i) => kept(i));
    expect(after.filter(Boolean)).toHaveLength(451);
    expect(after.slice(1, 51)).toEqual(Array(50).fill(false));
    expect(after[0]).toBe(true);
    expect(after.slice(51)).toEqual(Array(450).fill(true));
  });

  it('keeps a translation per SQL text and cache key (project and schema version), the 4 newest keys per text', () => {
    const sql = `select title from todos where id = $1 -- cache test`;
    const first = translate(sql, schema, 'p1:1');
    expect(translate(sql, schema, 'p1:1')).toBe(first);
    expect(cachedTranslation(sql, 'p1:1')).toBe(first);
    // another project or schema version is another entry, never the first's
    expect(cachedTranslation(sql, 'p2:1')).toBeUndefined();
    const other = translate(sql, schema, 'p2:1');
    expect(other).not.toBe(first);
    expect(cachedTranslation(sql, 'p1:1')).toBe(first);
    const newer = [2, 3, 4].map((v) => translate(sql, schema, `p1:${v}`));
    // five keys for one text: the oldest (p1:1) is dropped, the other four stay
    expect(cachedTranslation(sql, 'p1:1')).toBeUndefined();
    expect(cachedTranslation(sql, 'p2:1')).toBe(other);
    expect([2, 3, 4].map((v) => cachedTranslation(sql, `p1:${v}`))).toEqual(newer);
  });

  it('keeps SQL of up to 16 KiB (16,384 characters), not longer', () => {
    const sqlOf = (length: number): string => {
      const head = `select title from todos where title = '`;
      return `${head}${'x'.repeat(length - head.length - 1)}'`;
    };
    const atLimit = sqlOf(16 * 1024);
    const over = sqlOf(16 * 1024 + 1);
    expect([atLimit.length, over.length]).toEqual([16_384, 16_385]);
    expect(cachedTranslation(atLimit, 'p1:1')).toBeUndefined();
    const t = translate(atLimit, schema, 'p1:1');
    expect(cachedTranslation(atLimit, 'p1:1')).toBe(t);
    translate(over, schema, 'p1:1');
    expect(cachedTranslation(over, 'p1:1')).toBeUndefined();
  });
});
