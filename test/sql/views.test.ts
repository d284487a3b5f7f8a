import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../src/sql/pg/parse.js';
import { bind, translateUncached, type TableSource } from '../../src/sql/pg/translate.js';
import type { ColumnType } from '../../src/sql/pg/types.js';
import type { StoredView } from '../../src/sql/pg/views.js';

// Views in the translator (docs/sql.md "Views"): a view named in a query is its stored SELECT,
// translated again in that query as a derived table, so each table inside is one `\0T…\0`
// reference that the caller's binding replaces by its RLS-filtered form.
const T: ColumnType[] = [
  { name: 'id', type: 'int8', pk: true },
  { name: 'owner', type: 'uuid' },
  { name: 'n', type: 'int4' },
];
const schema = (p: string) => (p === 't' ? T : null);
const view = (name: string, definition: string, columns: ColumnType[], deps: string[]): StoredView => ({ name, definition, columns, deps });
const views = () =>
  new Map([
    ['v', view('v', 'create view v (who, n) as select owner, n from t where n > 0', [{ name: 'who', type: 'uuid' }, { name: 'n', type: 'int4' }], ['t'])],
    ['w', view('w', 'create view w as select count(*) as c from v', [{ name: 'c', type: 'int8' }], ['t', 'v'])],
  ]);
const tr = (sql: string) => translateUncached(sql, schema, undefined, views);
const plain = (sql: string) =>
  tr(sql)
    .statements[0]!.steps[0]!.sql.replace(/\0T(\w+)\0/g, '<$1>')
    .replace(/\0K[^\0]*\0/g, '<tick>');

beforeAll(loadParser);

describe('a view in a query', () => {
  it('is its SELECT as a derived table, named by a CTE column list', () => {
    expect(plain('select who from v')).toBe(
      'SELECT "who" AS "who" FROM (WITH "pe_view.v" ("who", "n") AS (SELECT "owner" AS "owner", "n" AS "n" FROM <t> AS "t" WHERE (("n" > 0)) AND <tick>) SELECT "who", "n" FROM "pe_view.v") AS "v" WHERE <tick>',
    );
  });

  it('views over views expand to the tables, each one a per-caller table reference', () => {
    const t = tr('select c from w');
    expect([...t.tables]).toEqual(['t']);
    const step = t.statements[0]!.steps[0]!.sql;
    expect(step.match(/\0Tt\0/g)).toHaveLength(1);
    // the caller's binding replaces the table by its RLS form, inside the view
    const rls: TableSource = (p) => ({ sql: `(SELECT * FROM "${p}" WHERE owner = ?)`, params: ['u1'] });
    const b = bind(step, [], rls);
    expect(b.sql).toContain('FROM (SELECT * FROM "t" WHERE owner = ?) AS "t"');
    expect(b.params).toEqual(['u1']);
  });

  it('an outer CTE of the same name as a table does not leak into the view', () => {
    const t = tr('with t as (select 1 as x) select c from w, t');
    expect(t.statements[0]!.steps[0]!.sql).toContain('\0Tt\0');
  });

  it('a write into a view is refused; a CTE named like a view wins, as in Postgres', () => {
    expect(() => tr("insert into v (who) values ('x')")).toThrow(/cannot insert into view "v"/);
    expect(plain('with v as (select 1 as who) select who from v')).toBe('WITH "v" AS (SELECT 1 AS "who") SELECT "who" AS "who" FROM "v" WHERE <tick>');
  });

  it('CREATE VIEW records its statement, columns and every table and view it reads', () => {
    const s = tr('create view z as select c from w').statements[0]!;
    expect(s.command).toBe('CREATE VIEW');
    expect(s.views?.set).toEqual({ name: 'z', definition: 'create view z as select c from w', columns: [{ name: 'c', type: 'int8' }], deps: ['t', 'v', 'w'] });
    expect(s.steps.map((x) => x.sql.split(' AS ')[0])).toEqual(['DROP VIEW IF EXISTS "z"', 'CREATE VIEW "z"', expect.stringMatching(/^INSERT INTO "_svc_meta.views"/)]);
  });
});
