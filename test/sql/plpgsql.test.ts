import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../src/sql/pg/parse.js';
import { compileTrigger, type TriggerSpec } from '../../src/sql/pg/plpgsql.js';
import type { ColumnType } from '../../src/sql/pg/types.js';

// The exact SQLite triggers a PL/pgSQL trigger function compiles to (docs/sql.md "Functions and triggers").
const T: ColumnType[] = [
  { name: 'id', type: 'int8', pk: true },
  { name: 'title', type: 'text' },
  { name: 'slug', type: 'text' },
  { name: 'n', type: 'int4' },
];
const schema = (p: string) => (p === 't' || p === 'log' ? T : null);
const fn = (body: string) => `create function f() returns trigger language plpgsql as $$ ${body} $$`;
const spec = (over: Partial<TriggerSpec> = {}): TriggerSpec => ({ name: 'tr', table: 't', timing: 'before', events: ['insert'], columns: [], when: null, ...over });

beforeAll(loadParser);

describe('compileTrigger', () => {
  it('a BEFORE assignment is an AFTER trigger that updates the row by its key when the value differs, the row marked meanwhile', () => {
    const c = compileTrigger(spec(), fn('begin new.slug := lower(new.title); return new; end'), schema);
    expect(c.names).toEqual(['pe_trg_t_tr_insert_set']);
    expect(c.create).toEqual([
      'CREATE TRIGGER "pe_trg_t_tr_insert_set" AFTER INSERT ON "t" FOR EACH ROW BEGIN SELECT pe_trg_step(); ' +
        `INSERT INTO "_svc_meta.sql_applying" (tbl, rid) VALUES ('t', "new".rowid); ` +
        'UPDATE "t" SET "slug" = pe_lower("new"."title") WHERE "id" = "new"."id" AND ("slug" IS NOT (pe_lower("new"."title"))); ' +
        `DELETE FROM "_svc_meta.sql_applying" WHERE tbl = 't' AND rid = "new".rowid; END`,
    ]);
  });

  it('IF guards each statement; RAISE is RAISE(ABORT) with the P0001 marker; RETURN NULL is RAISE(IGNORE)', () => {
    const c = compileTrigger(spec(), fn(`begin
      if new.n < 0 then raise exception 'bad %', new.n;
      elsif new.n = 0 then return null; end if;
      insert into log (title) values (new.title);
      return new; end`), schema);
    expect(c.create).toHaveLength(1);
    expect(c.create[0]).toBe(
      'CREATE TRIGGER "pe_trg_t_tr_insert" BEFORE INSERT ON "t" FOR EACH ROW BEGIN SELECT pe_trg_step(); ' +
        `SELECT RAISE(ABORT, 'pe_raise: bad ' || coalesce(CAST("new"."n" AS TEXT), '<NULL>') || '') WHERE (("new"."n" < 0) IS 1); ` +
        'SELECT RAISE(IGNORE) WHERE ((NOT (("new"."n" < 0) IS 1)) AND (("new"."n" = 0) IS 1)); ' +
        'INSERT INTO "log" AS "log" ("title") SELECT * FROM (SELECT "new"."title" AS "title" WHERE (NOT ((NOT (("new"."n" < 0) IS 1)) AND (("new"."n" = 0) IS 1)))) WHERE true; END',
    );
    expect(c.writes).toEqual(['log']);
  });

  it('one SQLite trigger per event, TG_OP a constant, WHEN and UPDATE OF kept', () => {
    const c = compileTrigger(
      spec({ timing: 'after', events: ['insert', 'update'], columns: ['title'], when: null }),
      fn(`begin insert into log (title) values (tg_op || ':' || coalesce(old.title, '-')); return new; end`),
      schema,
    );
    expect(c.names).toEqual(['pe_trg_t_tr_insert', 'pe_trg_t_tr_update']);
    expect(c.create[0]).toContain(`AFTER INSERT ON "t"`);
    expect(c.create[0]).toContain(`(('INSERT' || ':') || coalesce(NULL, '-'))`);
    expect(c.create[1]).toContain(`AFTER UPDATE OF "title" ON "t" FOR EACH ROW WHEN NOT EXISTS (SELECT 1 FROM "_svc_meta.sql_applying" WHERE tbl = 't' AND rid = "new".rowid) BEGIN`);
    expect(c.create[1]).toContain(`(('UPDATE' || ':') || coalesce("old"."title", CAST('-' AS TEXT)))`);
  });
});
