import { DELETE, INSERT, SELECT, UPDATE } from '../grants.js';
import type { Node } from './emit.js';
import type { Statement } from './statements.js';

/**
 * The table privileges a translated statement needs, as Postgres decides them (docs/sql.md
 * "Privileges: GRANT and REVOKE"): SELECT on every table it reads (FROM, joins, subqueries,
 * CTEs, `INSERT … SELECT`, `UPDATE … FROM`); on the target, INSERT, UPDATE or DELETE, plus
 * SELECT when the statement reads the target's columns (a WHERE, RETURNING, a SET value
 * naming a column) and UPDATE for `ON CONFLICT … DO UPDATE`. Computed once per cached
 * translation from the tables the emitter referenced (`refs`, in order: a data-changing
 * statement names its target first); checked per caller by src/sql/grants.ts.
 */
export function statementPrivileges(n: Node, s: Statement, refs: readonly string[], out: Map<string, number>): void {
  const add = (t: string, bits: number): void => {
    out.set(t, (out.get(t) ?? 0) | bits);
  };
  const dml = s.command === 'INSERT' || s.command === 'UPDATE' || s.command === 'DELETE';
  if (s.command !== 'SELECT' && !dml) return;
  for (let i = dml ? 1 : 0; i < refs.length; i++) add(refs[i]!, SELECT);
  if (!dml || refs.length === 0) return;
  const target = refs[0]!;
  const returning = ((n.returning as { columns?: unknown[] } | undefined)?.columns?.length ?? 0) > 0;
  if (s.command === 'INSERT') {
    const action = ((n.conflict as Node | undefined)?.action as Node | undefined)?.expr as Node | undefined;
    const upsert = action?.type === 'update';
    add(target, INSERT | (upsert ? UPDATE | SELECT : 0) | (returning ? SELECT : 0));
  } else if (s.command === 'UPDATE') {
    add(target, UPDATE | (n.where || returning || readsColumns(((n.set as Node[] | undefined) ?? []).map((x) => x.value)) ? SELECT : 0));
  } else add(target, DELETE | (n.where || returning ? SELECT : 0));
}

/** Whether an expression tree names a column (SET values). */
function readsColumns(v: unknown): boolean {
  if (Array.isArray(v)) return v.some(readsColumns);
  if (v === null || typeof v !== 'object') return false;
  const o = v as Node;
  if (o.type === 'column_ref') return true;
  for (const k in o) if (readsColumns(o[k])) return true;
  return false;
}
