import { describe, expect, it } from 'vitest';
import { parseListQuery } from '../../src/services/db/filters.js';
import type { ColumnDef, TableInfo } from '../../src/sql/table-model.js';
import { buildGroupedList, buildList } from '../../src/services/db/list-query.js';

const col = (name: string, type: ColumnDef['type']): ColumnDef => ({ name, type, nullable: true, default: null, unique: false, references: null });
const rls = { enabled: false, policies: {}, compiled: {}, version: 0 };
const doc: TableInfo = { def: { name: 'people', kind: 'document', columns: [], indexes: [], created_at: null }, cols: new Map(), rls, system: false, sql: new Map() };
const relCols = [col('name', 'text'), col('qty', 'int8'), col('ok', 'bool'), col('meta', 'jsonb')];
const rel: TableInfo = { def: { name: 'prods', kind: 'relational', columns: relCols, indexes: [], created_at: null }, cols: new Map(relCols.map((c) => [c.name, c])), rls, system: false, sql: new Map() };
const build = (t: TableInfo, qs: string, policy: Parameters<typeof buildList>[2] = null) => buildList(t, parseListQuery(new URLSearchParams(qs)), policy);

describe('buildList', () => {
  it('document paths become the indexed json_extract expression; values are bound', () => {
    const r = build(doc, "filter=address.city.eq.Paris'--&filter=age.gt.30&order=age.desc.nullslast&limit=5&offset=10&count=exact");
    expect(r.sql).toBe(
      `SELECT "id", "data", "created_at", "updated_at" FROM "people" WHERE json_extract("data", '$.address.city') = ? AND json_extract("data", '$.age') > ? ORDER BY json_extract("data", '$.age') DESC NULLS LAST, "id" LIMIT ? OFFSET ?`,
    );
    expect(r.params).toEqual(["Paris'--", 30, 6, 10]);
    expect(r.countSql).toBe(`SELECT count(*) AS n FROM "people" WHERE json_extract("data", '$.address.city') = ? AND json_extract("data", '$.age') > ?`);
    expect(r.countParams).toEqual(["Paris'--", 30]);
  });

  it('relational values are typed per column; or-groups and in-lists', () => {
    const r = build(rel, 'filter=qty.in.(1,2)&or=(ok.is.true,name.like.a%25)&select=name');
    expect(r.sql).toBe(`SELECT "id", "name", "created_at", "updated_at" FROM "prods" WHERE "qty" IN (?, ?) AND ("ok" IS 1 OR "name" GLOB ?) ORDER BY "id" LIMIT ? OFFSET ?`);
    expect(r.params).toEqual([1, 2, 'a*', 101, 0]);
    expect(r.columns).toEqual(['name']);
  });

  it('appends the compiled select policy with its values', () => {
    const r = build(rel, 'filter=qty.eq.3', { p: { sql: '(("name" = ?))', params: [{ k: 'uid' }] }, values: ['u1'] });
    expect(r.sql).toContain('WHERE "qty" = ? AND (("name" = ?))');
    expect(r.params).toEqual([3, 'u1', 101, 0]);
  });

  it('document select builds a json_object from validated keys', () => {
    expect(build(doc, 'select=name,address.city').sql).toContain(`json_object('name', "data" -> '$.name', 'address.city', "data" -> '$.address.city') AS "data"`);
  });

  it.each(['filter=nope.eq.1', 'filter=qty.eq.x', 'filter=ok.eq.maybe', 'select=nope', 'order=nope', 'filter=name.sub.eq.1'])('%s on a relational table → invalid_request', (qs) => {
    expect(() => build(rel, qs)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });
});

describe('buildGroupedList', () => {
  it('limits and offsets per key with row_number() over each key\'s rows, filters and the policy bound before the keys', () => {
    const q = parseListQuery(new URLSearchParams('filter=ok.is.true&filter=qty.gt.2&order=qty.desc&limit=5&offset=1'));
    const r = buildGroupedList(rel, q, 'name', ['a', 'b'], { p: { sql: '(("meta" IS NOT ?))', params: [{ k: 'uid' }] }, values: ['u1'] }, 10_001);
    expect(r.sql).toBe(
      'SELECT * FROM (SELECT "id", "name", "qty", "ok", "meta", "created_at", "updated_at", row_number() OVER (PARTITION BY "name" ORDER BY "qty" DESC, "id") AS "__rn" ' +
        'FROM "prods" WHERE "ok" IS 1 AND "qty" > ? AND (("meta" IS NOT ?)) AND "name" IN (?, ?)) WHERE "__rn" > ? AND "__rn" <= ? ORDER BY "name", "__rn" LIMIT ?',
    );
    expect(r.params).toEqual([2, 'u1', 'a', 'b', 1, 6, 10_001]);
    expect(r.columns).toEqual(['name', 'qty', 'ok', 'meta']);
  });
});
