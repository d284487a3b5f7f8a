import { EdgeError } from '../../core/errors.js';
import { columnName, type Node } from './emit.js';

/** A value whose emitted SQLite alone says what it is: a literal, or a parameter as bound. */
const CONSTANT = /^('(?:[^']|'')*'|-?\d+(\.\d+)?|\0P\d+(:\w+)?\0)$/;

/** A constant, or one converted by a cast or a one-argument conversion (`CAST('a' AS TEXT)`, `pe_uuid('…')`). */
function isConstant(sql: string): boolean {
  const cast = /^CAST\((.*) AS [A-Z]+\)$/s.exec(sql) ?? /^pe_(?:uuid|ts|date|int|int4|int8|float|bool|jsonb)\((.*)\)$/s.exec(sql);
  return cast ? isConstant(cast[1]!) : CONSTANT.test(sql);
}

/**
 * Postgres fails an `INSERT … VALUES … ON CONFLICT (cols) DO UPDATE` whose rows propose the
 * same key twice (21000 "ON CONFLICT DO UPDATE command cannot affect row a second time");
 * SQLite would update the row twice. Checked here for rows whose key columns are constants
 * (the same literal or parameter in two rows); a key computed by an expression is not
 * compared (docs/sql.md "Corpus fixes").
 */
export function checkUpsertKeys(conflict: Node | undefined, cols: readonly string[], rows: readonly string[][]): void {
  const action = (conflict?.action as Node | undefined)?.expr as Node | undefined;
  if (action?.type !== 'update' || rows.length < 2) return;
  const target = (conflict!.target as { expr?: Node[] } | undefined)?.expr?.map((e) => columnName(e).toLowerCase()) ?? [];
  const at = target.map((c) => cols.findIndex((x) => x.toLowerCase() === c));
  if (!at.length || at.some((i) => i < 0)) return;
  const seen = new Set<string>();
  for (const row of rows) {
    const key = at.map((i) => row[i] ?? '');
    if (!key.every(isConstant)) continue;
    const text = JSON.stringify(key);
    if (seen.has(text)) {
      throw new EdgeError('invalid_request', 'ON CONFLICT DO UPDATE command cannot affect row a second time', {
        details: { sqlstate: '21000', hint: 'Ensure that no rows proposed for insertion within the same command have duplicate constrained values.' },
      });
    }
    seen.add(text);
  }
}
