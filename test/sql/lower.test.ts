import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../src/sql/pg/parse.js';
import { translateUncached } from '../../src/sql/pg/translate.js';
import type { ColumnType } from '../../src/sql/pg/types.js';

// The SQLite emitted per construct family, from PostgreSQL's own parse tree (issue 17).
const T: ColumnType[] = [
  { name: 'id', type: 'int8', pk: true },
  { name: 'at', type: 'timestamptz' },
  { name: 'type', type: 'text' },
  { name: 'value', type: 'int4' },
];
const schema = (p: string) => (p === 't' ? T : null);
const sqlOf = (sql: string) =>
  translateUncached(sql, schema)
    .statements.map((s) => s.steps.map((x) => x.sql).join('; '))
    .join(' | ')
    .replace(/\0T(\w+)\0/g, '<$1>')
    .replace(/\0K[^\0]*\0/g, '<tick>')
    .replace(/\0P(\d+)(:\w+)?\0/g, (_, n: string, f?: string) => `<$${n}${f ?? ''}>`);
const refusal = (sql: string) => {
  try {
    sqlOf(sql);
  } catch (err) {
    return { message: (err as Error).message, details: (err as { details?: unknown }).details };
  }
  throw new Error(`translated: ${sql}`);
};

beforeAll(loadParser);

describe('emitted SQLite per construct family', () => {
  const cases: Array<[string, string]> = [
    // keywords as column names
    ['select at, type, value from t', 'SELECT "at" AS "at", "type" AS "type", "value" AS "value" FROM <t> AS "t" WHERE <tick>'],
    // typed literals
    ["select date '2024-01-31' as d", `SELECT pe_date('2024-01-31') AS "d"`],
    ["select timestamptz '2024-01-31T00:00:00Z' as t", `SELECT pe_ts('2024-01-31T00:00:00Z') AS "t"`],
    ["select at + interval '1 day' as t from t", `SELECT pe_ts_add("at", '1 day', 1) AS "t" FROM <t> AS "t" WHERE <tick>`],
    // IS [NOT] DISTINCT FROM
    ['select 1 from t where value is distinct from 2', 'SELECT 1 AS "?column?" FROM <t> AS "t" WHERE (("value" IS NOT 2)) AND <tick>'],
    ['select 1 from t where value is not distinct from null', 'SELECT 1 AS "?column?" FROM <t> AS "t" WHERE (("value" IS NULL)) AND <tick>'],
    // aggregate FILTER and ORDER BY inside aggregates
    ['select count(*) filter (where value > 1) from t', 'SELECT count(*) FILTER (WHERE ("value" > 1)) AS "count" FROM <t> AS "t" WHERE <tick>'],
    [
      'select jsonb_agg(type order by id desc) from t',
      `SELECT CASE WHEN count(*) = 0 THEN NULL ELSE json_group_array("type" ORDER BY "id" DESC NULLS FIRST) END AS "jsonb_agg" FROM <t> AS "t" WHERE <tick>`,
    ],
    // typed parameters
    ['select $1::int + $2::int as s', 'SELECT pe_iadd(<$1:pe_int4>, <$2:pe_int4>, 32) AS "s"'],
    // VALUES as a FROM item and as a CTE body, with column aliases
    ["select n from (values (1, 'a'), (2, 'b')) as v(n, s)", `SELECT "n" AS "n" FROM (SELECT "column1" AS "n", "column2" AS "s" FROM (VALUES (1, CAST('a' AS TEXT)), (2, CAST('b' AS TEXT)))) AS "v" WHERE <tick>`],
    ['with v(n) as (values (1), (2)) select n from v', 'WITH "v" ("n") AS (VALUES (1), (2)) SELECT "n" AS "n" FROM "v" WHERE <tick>'],
    // LATERAL subqueries: rows as JSON from a correlated scalar subquery, read back by json_each (lateral.ts)
    [
      'select t.id, l.n from t left join lateral (select count(*) as n from t u where u.value = t.value) l on true',
      `SELECT "t"."id" AS "id", json_extract("l"."value", '$[0]') AS "n" FROM <t> AS "t" LEFT JOIN json_each((WITH "pe_l"("c0") AS (SELECT count(*) AS "n" FROM <t> AS "u" WHERE (("u"."value" = "t"."value")) AND <tick>) SELECT json_group_array(json_array(CASE typeof("c0") WHEN 'text' THEN "c0" || '' ELSE "c0" END)) FROM "pe_l")) AS "l" ON 1 WHERE <tick>`,
    ],
    // a set-returning function in the select list: its FROM form, joined
    ['select id, unnest(array[type]) from t', `SELECT "t"."id" AS "id", "pe_srf"."value" AS "unnest" FROM <t> AS "t", json_each(json_array("type")) AS "pe_srf" WHERE <tick>`],
    // dollar-quoted strings
    ["select $$it's$$ as a", `SELECT 'it''s' AS "a"`],
    // IN and BETWEEN lists
    ['select id from t where id in (1, 2) and value between 1 and 3', 'SELECT "id" AS "id" FROM <t> AS "t" WHERE ((("id" IN (1, 2)) AND ("value" BETWEEN 1 AND 3))) AND <tick>'],
    // = ANY (subquery) is IN (subquery)
    ['select id from t where id = any (select id from t)', 'SELECT "id" AS "id" FROM <t> AS "t" WHERE (("id" IN (SELECT "id" AS "id" FROM <t> AS "t" WHERE <tick>))) AND <tick>'],
  ];
  for (const [pg, sqlite] of cases) it(pg, () => expect(sqlOf(pg)).toBe(sqlite));

  it('runs a data-modifying WITH item first into a TEMP table, then the main statement over it, then drops it', () => {
    expect(sqlOf('with d as (delete from t where value > 1 returning id) select count(*) from d')).toBe(
      'DELETE FROM <t> AS "t" WHERE (("value" > 1)) AND <tick> RETURNING "id" AS "id"; ' +
        'WITH "d" AS (SELECT "c1" AS "id" FROM temp."pe_cte_d") SELECT count(*) AS "count" FROM "d" WHERE <tick>; ' +
        'DROP TABLE temp."pe_cte_d"',
    );
    const into = translateUncached('with d as (delete from t returning id) select id from d', schema).statements[0]!.steps.map((x) => x.into ?? null);
    expect(into).toEqual(['pe_cte_d', null, null]);
  });

  it('types arrays of integers from literals and ARRAY[…]', () => {
    expect(sqlOf(`select '{1,2}'::int[] as a, array[1, 2] as b`)).toBe(`SELECT pe_int4_array('{1,2}') AS "a", json_array(1, 2) AS "b"`);
    expect(sqlOf(`select array[true, null] as f`)).toBe(`SELECT json_array(CASE WHEN 1 IS NULL THEN NULL WHEN 1 THEN json('true') ELSE json('false') END, NULL) AS "f"`);
  });

  it('generate_series in FROM is a recursive CTE checked by the time limit', () => {
    expect(sqlOf('select g from generate_series(1, 3) g')).toBe(
      'SELECT "g" AS "g" FROM (SELECT "v0" AS "g" FROM (WITH RECURSIVE "pe_series"("v") AS (SELECT 1 WHERE ((1 > 0 AND 1 <= 3) OR (1 < 0 AND 1 >= 3)) ' +
        'UNION ALL SELECT "v" + 1 FROM "pe_series" WHERE ((1 > 0 AND "v" + 1 <= 3) OR (1 < 0 AND "v" + 1 >= 3)) AND <tick>) SELECT "v" AS "v0" FROM "pe_series")) AS "g" WHERE <tick>',
    );
  });

  it('keeps a column CHECK\'s declared name (an undeclared one is named where a violation is worded)', () => {
    expect(sqlOf('create table c (id int primary key, n int constraint n_pos check (n > 0))')).toContain('"n" INTEGER CONSTRAINT "n_pos" CHECK (("n" > 0))');
    expect(sqlOf('create table c (id int primary key, n int check (n > 0))')).toContain('"n" INTEGER CHECK (("n" > 0))');
  });

  it('reads GENERATED ALWAYS AS IDENTITY and a bare REFERENCES', () => {
    const sql = sqlOf('create table g (id bigint generated always as identity primary key, t_id bigint references t)');
    expect(sql).toContain('"id" INTEGER PRIMARY KEY AUTOINCREMENT');
    expect(sql).toContain('"t_id" BIGINT REFERENCES "t"');
    expect(sql).toContain('cannot insert a non-DEFAULT value into column "id"');
  });

  it('reads CREATE POLICY … TO authenticated USING (…) and keeps the expression text', () => {
    const t = translateUncached('create policy "own" on t for select to authenticated using (type = auth.uid()::text)', (p) => (p === 't' ? T : null));
    expect(t.statements[0]!.policy).toEqual({
      action: 'create',
      table: 't',
      policy: { name: 'own', command: 'select', permissive: true, roles: ['authenticated'], using: 'type = auth.uid()::text', check: null },
    });
  });
});

describe('refused by name, never dropped', () => {
  const cases: Array<[string, string]> = [
    ['select count(*) from t natural join t u', 'NATURAL JOIN (write JOIN … USING (columns))'],
    ['select * from t join t u using (id)', 'SELECT * over JOIN … USING (name the columns)'],
    ['select * from generate_series(1, 3) with ordinality', 'WITH ORDINALITY'],
    ['select * from generate_series(1.5, 3)', 'generate_series over other than integers and timestamps'],
    ['select sum(id) over (order by id range between 1 preceding and current row) from t', 'RANGE frames with an offset (use ROWS or GROUPS)'],
    ['select rank(1) within group (order by id) from t', 'WITHIN GROUP'],
    ['select * from t, lateral (select distinct u.type from t u limit t.value) x', 'LIMIT/OFFSET other than a number or a parameter with DISTINCT or *'],
    ['select jsonb_each(\'{}\'::jsonb)', 'jsonb_each() in the select list (it returns a record): put it in FROM'],
    ['select * from pg_sleep(1)', 'function pg_sleep() in FROM'],
    ['select type, unnest(array[type]) from t group by type', 'a set-returning function in the select list of an aggregate or window query other than grouped by it (put it in FROM over a subquery)'],
    ['create temp view v as select 1', 'temporary views'],
    ["select 'a' similar to 'b'", 'SIMILAR TO'],
  ];
  for (const [pg, construct] of cases) {
    it(pg, () => {
      const r = refusal(pg);
      expect(r.details).toMatchObject({ construct });
    });
  }
});
