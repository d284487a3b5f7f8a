import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { columnName, unsupported, type Emitter, type Node } from './emit.js';
import { statementPrivileges } from './privileges.js';
import type { Statement, Step } from './statements.js';
import type { ColumnType } from './types.js';

/**
 * A statement's own WITH when SQLite cannot take it as written (docs/sql.md "Data-modifying
 * WITH"): a data-modifying item (`with ins as (insert … returning id) insert … select … from
 * ins`), which SQLite has no form for, or any WITH on INSERT/UPDATE/DELETE.
 *
 * Each data-modifying item runs first, in order, as its own step, its RETURNING rows kept in a
 * TEMP table of the statement's connection (the worker's `into`, inside the script's
 * transaction, so an error anywhere rolls back all of it); every item is then a CTE of the
 * following steps (`name AS (SELECT … FROM temp."pe_cte_name")`, with the RETURNING columns'
 * types); the main statement runs with that WITH; the TEMP tables are dropped. Each part is
 * translated as the plain statement would be (RLS, GRANTs, change capture, violations).
 */

/** Whether statement() hands `n` to withStatement. */
export function needsStatementWith(n: Node): boolean {
  const ws = Array.isArray(n.with) ? (n.with as Node[]) : [];
  if (!ws.length) return false;
  return n.type !== 'select' || ws.some((w) => w.dml !== undefined);
}

const TEMP_PREFIX = 'pe_cte_';

export function withStatement(n: Node, em: Emitter, run: (n: Node, em: Emitter) => Statement): Statement {
  if (n.type !== 'select' && n.type !== 'insert' && n.type !== 'update' && n.type !== 'delete') throw unsupported(`WITH on ${String(n.type)}`);
  const ws = n.with as Node[];
  const scope = new Map<string, ColumnType[] | null>();
  const recursive = ws.some((w) => w.recursive);
  const parts: string[] = [];
  const steps: Step[] = [];
  const temps: string[] = [];
  const privileges = new Map<string, number>();
  const prefix = (): string => (parts.length ? `WITH ${recursive ? 'RECURSIVE ' : ''}${parts.join(', ')} ` : '');
  em._ctes.push(scope);
  try {
    for (const w of ws) {
      const name = String((w.name as Node | undefined)?.value ?? '').toLowerCase();
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw unsupported('this CTE name');
      if (scope.has(name)) throw new EdgeError('invalid_request', `WITH query name "${name}" specified more than once`, { details: { sqlstate: '42712' } });
      const cols = Array.isArray(w.columns) ? (w.columns as Node[]).map((c) => columnName(c)) : null;
      if (w.dml) {
        const mark = em.refs.length;
        const sub = run(w.dml as Node, em);
        // note: each item needs what its plain statement needs (its target first in its refs).
        statementPrivileges(w.dml as Node, sub, em.refs.splice(mark), privileges);
        for (const [t, bits] of sub.dmlPrivileges ?? []) privileges.set(t, (privileges.get(t) ?? 0) | bits);
        if (sub.steps.length !== 1) throw unsupported(`this ${sub.command} in WITH`);
        if (sub.columns === null) throw unsupported(`RETURNING * in WITH from a table whose columns are unknown`);
        if (sub.columns.length === 0) {
          // note: without RETURNING it runs and is not a name (Postgres: referencing it is an error).
          steps.push({ sql: prefix() + sub.steps[0]!.sql });
          em._noReturning.add(name);
          continue;
        }
        if (cols && cols.length > sub.columns.length) {
          throw new EdgeError('invalid_request', `WITH query "${name}" has ${sub.columns.length} columns available but ${cols.length} columns specified`, { details: { sqlstate: '42P10' } });
        }
        const temp = TEMP_PREFIX + name;
        steps.push({ sql: prefix() + sub.steps[0]!.sql, into: temp });
        temps.push(temp);
        const out = sub.columns.map((c, i) => ({ ...c, name: cols?.[i] ?? c.name }));
        scope.set(name, out);
        parts.push(`${quoteIdent(name)} AS (SELECT ${out.map((c, i) => `"c${i + 1}" AS ${quoteIdent(c.name)}`).join(', ')} FROM temp.${quoteIdent(temp)})`);
        continue;
      }
      // note: as emit.ts select() does for a query's WITH.
      scope.set(name, cols ? cols.map((c) => ({ name: c, type: null })) : null);
      const stmt = (w.stmt as Node | undefined)?.ast ? ((w.stmt as Node).ast as Node) : (w.stmt as Node);
      const body = em.select(stmt);
      scope.set(name, cols ? cols.map((c, i) => ({ name: c, type: body.columns?.[i]?.type ?? null })) : body.columns);
      parts.push(`${quoteIdent(name)}${cols ? ` (${cols.map(quoteIdent).join(', ')})` : ''} AS (${body.sql})`);
    }
    const plain: Node = {};
    for (const k in n) if (k !== 'with') plain[k] = n[k];
    const mark = em.refs.length;
    const main = run(plain, em);
    // note: privileges.ts reads a data-changing statement's first ref as its target; the WITH's tables came first.
    if (main.command !== 'SELECT' && em.refs.length > mark && mark > 0) em.refs.unshift(em.refs.splice(mark, 1)[0]!);
    if (main.steps.length !== 1) throw unsupported(`this ${main.command} with WITH`);
    steps.push({ ...main.steps[0]!, sql: prefix() + main.steps[0]!.sql });
    for (const t of temps) steps.push({ sql: `DROP TABLE temp.${quoteIdent(t)}` });
    const readOnly = main.readOnly && temps.length === 0 && steps.length === 1;
    const { pointLookup: _unused, ...rest } = main;
    void _unused;
    return { ...rest, steps, readOnly, ...(privileges.size ? { dmlPrivileges: privileges } : {}) };
  } finally {
    em._ctes.pop();
  }
}
