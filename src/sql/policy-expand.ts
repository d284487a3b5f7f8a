import { EdgeError } from '../core/errors.js';
import { quoteIdent } from './quote.js';
import type { CompiledPolicy, PolicyParam, RlsState, TableInfo } from './table-model.js';

/**
 * Policies whose subqueries read other tables (`exists (select 1 from members m where …)`).
 * Compiled policies keep a `\0R<table>\0` marker where a subquery reads a table; when the
 * catalog loads, each marker becomes that table as the caller may read it, as Postgres reads a
 * policy's subquery under the other table's RLS: the table itself when its RLS is off, else
 * `(SELECT * FROM t WHERE <t's select policy, expanded the same way>)`. So every path that
 * uses a compiled policy (rows API, /db/query, GraphQL, realtime) reads the expanded one, with
 * its parameters in order, and nothing is re-parsed per request.
 *
 * A cycle (t's policy reads u, whose select policy reads t; or t's reads t) is what Postgres
 * calls `infinite recursion detected in policy for relation "t"` (42P17): the policy keeps
 * that error, raised when a caller under RLS uses it (rls.ts `usePolicy`).
 */

/** How large an expanded policy may grow (a diamond of policies could multiply). */
const MAX_EXPANDED = 200_000;
const DENY: CompiledPolicy = { sql: '(0)', params: [] };

class Expansion extends Error {
  constructor(readonly sqlstate: string, message: string) {
    super(message);
  }
}

/** Replaces every table's compiled policies by their expanded forms (in place, on a fresh catalog). */
export function expandPolicies(tables: Map<string, TableInfo>): void {
  const raw = new Map<string, RlsState>();
  for (const [name, t] of tables) raw.set(name, t.rls);
  for (const [name, t] of tables) {
    const c = t.rls.compiled;
    if (!Object.values(c).some((p) => p?.refs?.length)) continue;
    const out: RlsState['compiled'] = {};
    for (const [op, p] of Object.entries(c) as Array<[keyof RlsState['compiled'], CompiledPolicy]>) out[op] = expandOne(p, [name], raw);
    t.rls = { ...t.rls, compiled: out };
  }
}

function expandOne(p: CompiledPolicy, stack: string[], raw: Map<string, RlsState>): CompiledPolicy {
  if (!p.refs?.length) return p;
  try {
    const sql: string[] = [];
    const params: PolicyParam[] = [];
    expandInto(p, stack, raw, sql, params, { size: 0 });
    return p.fns ? { sql: sql.join(''), params, fns: p.fns } : { sql: sql.join(''), params };
  } catch (err) {
    if (!(err instanceof Expansion)) throw err;
    const error = { sqlstate: err.sqlstate, message: err.message };
    return p.fns ? { sql: '(0)', params: [], error, fns: p.fns } : { sql: '(0)', params: [], error };
  }
}

function expandInto(p: CompiledPolicy, stack: string[], raw: Map<string, RlsState>, sql: string[], params: PolicyParam[], budget: { size: number }): void {
  budget.size += p.sql.length;
  if (budget.size > MAX_EXPANDED) throw new Expansion('54001', 'the policy is too large once the policies of the tables it reads are included');
  const s = p.sql;
  let pi = 0;
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '"') {
      // note: a quoted identifier may hold `?` or anything else; `""` is a quote inside it.
      for (i++; i < s.length; i++) {
        if (s[i] !== '"') continue;
        if (s[i + 1] !== '"') break;
        i++;
      }
    } else if (ch === '?') {
      params.push(p.params[pi++]!);
    } else if (ch === '\0') {
      const end = s.indexOf('\0', i + 1);
      sql.push(s.slice(from, i));
      relation(s.slice(i + 2, end), stack, raw, sql, params, budget);
      i = end;
      from = end + 1;
    }
  }
  sql.push(s.slice(from));
}

function relation(table: string, stack: string[], raw: Map<string, RlsState>, sql: string[], params: PolicyParam[], budget: { size: number }): void {
  const rls = raw.get(table);
  if (!rls) throw new Expansion('42P01', `relation "${table}" does not exist`);
  if (!rls.enabled) {
    sql.push(quoteIdent(table));
    return;
  }
  if (stack.includes(table)) throw new Expansion('42P17', `infinite recursion detected in policy for relation "${table}"`);
  sql.push(`(SELECT * FROM ${quoteIdent(table)} WHERE `);
  expandInto(rls.compiled.select ?? DENY, [...stack, table], raw, sql, params, budget);
  sql.push(')');
}

/** A policy to use for a caller: its error (a policy cycle, 42P17) is the request's. */
export function usePolicy(p: CompiledPolicy): CompiledPolicy {
  if (p.error) throw new EdgeError('invalid_request', p.error.message, { details: { sqlstate: p.error.sqlstate } });
  return p;
}
