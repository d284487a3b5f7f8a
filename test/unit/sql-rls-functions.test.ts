import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../src/sql/pg/parse.js';
import { compilePolicy } from '../../src/sql/rls.js';
import type { SqlFunction } from '../../src/sql/pg/sql-functions.js';
import type { TableDef } from '../../src/sql/table-model.js';

// Calls of LANGUAGE sql functions in policies, inlined by the policy compiler (docs/sql.md
// "Functions in policies"): the exact SQLite each form compiles to.

beforeAll(loadParser);

const col = (name: string, type: 'uuid' | 'text' | 'bool') => ({ name, type, nullable: true, default: null, unique: false, references: null });
const tasks: TableDef = { name: 'tasks', kind: 'relational', columns: [col('team_id', 'uuid'), col('title', 'text')], indexes: [], created_at: null };
const members: TableDef = { name: 'members', kind: 'relational', columns: [col('team_id', 'uuid'), col('user_id', 'uuid')], indexes: [], created_at: null };
const lookup = (n: string): TableDef | null => ({ tasks, members })[n as 'tasks'] ?? null;
const fn = (name: string, definer: boolean, source: string): SqlFunction => ({ name, language: 'sql', returns: 'bool', definer: definer ? 1 : 0, source });
const body = `select exists (select 1 from public.members m where m.team_id = _team and m.user_id = auth.uid())`;
const FNS: Record<string, SqlFunction> = {
  member_d: fn('member_d', true, `create function member_d(_team uuid) returns boolean language sql security definer as $$ ${body} $$`),
  member_i: fn('member_i', false, `create function member_i(_team uuid) returns boolean language sql as $$ ${body} $$`),
  pos: fn('pos', false, `create function pos(text) returns boolean language sql as $$ select $1 = 'x' or $1 is null $$`),
  title_of: { ...fn('title_of', false, `create function title_of(t text) returns text language sql as $$ select t $$`), returns: 'text' },
  sees_row: fn('sees_row', false, `create function sees_row() returns boolean language sql as $$ select title = 'x' $$`),
};
const compile = (src: string) => compilePolicy(src, tasks, lookup, (n) => FNS[n] ?? null);

describe('a LANGUAGE sql function in a policy', () => {
  it('security definer: the body reads the table itself (no marker), the argument is the row\'s column qualified by its table', () => {
    expect(compile('public.member_d(team_id)')).toEqual({
      sql: '((EXISTS (SELECT 1 FROM "members" AS "pe_s1" WHERE (("pe_s1"."team_id" = "tasks"."team_id") AND ("pe_s1"."user_id" = ?)))))',
      params: [{ k: 'uid' }],
      fns: ['member_d'],
    });
  });

  it('security invoker: the body reads the caller\'s form of the table (a marker expanded under its RLS)', () => {
    expect(compile('member_i(team_id)')).toEqual({
      sql: '((EXISTS (SELECT 1 FROM \0Rmembers\0 AS "pe_s1" WHERE (("pe_s1"."team_id" = "tasks"."team_id") AND ("pe_s1"."user_id" = ?)))))',
      params: [{ k: 'uid' }],
      refs: ['members'],
      fns: ['member_i'],
    });
  });

  it('positional parameters, each use binding its argument again; a non-boolean function as a value', () => {
    expect(compile(`pos(title) and title_of('a') = title`)).toEqual({
      sql: `(((("title" = ?) OR ("title" IS NULL)) AND (? = "title")))`,
      params: [{ k: 'lit', v: 'x' }, { k: 'lit', v: 'a' }],
      fns: ['pos', 'title_of'],
    });
  });

  it('refuses as Postgres does: the caller\'s row is not in the body\'s scope; unknown, wrongly called and non-boolean functions', () => {
    const err = (src: string) => {
      try {
        compile(src);
      } catch (e) {
        return { message: (e as Error).message, sqlstate: (e as { details?: { sqlstate?: string } }).details?.sqlstate };
      }
      throw new Error('compiled');
    };
    expect(err('sees_row()')).toEqual({ message: 'column "title" does not exist', sqlstate: '42703' });
    expect(err(`nope(team_id, 1, 'a', true)`)).toEqual({ message: 'function nope(uuid, integer, unknown, boolean) does not exist', sqlstate: '42883' });
    expect(err('member_d()')).toEqual({ message: 'function member_d() does not exist', sqlstate: '42883' });
    expect(err(`title_of('a')`)).toEqual({ message: 'argument of POLICY must be type boolean, not type text', sqlstate: '42804' });
    expect(err(`not title_of('a')`)).toEqual({ message: 'argument of NOT must be type boolean, not type text', sqlstate: '42804' });
    expect(err('lower(title) = title').message).toBe('function lower is not allowed');
  });
});
