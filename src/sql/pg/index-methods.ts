import { columnName, type Emitter, type Node, unsupported } from './emit.js';

/**
 * `CREATE INDEX … USING gin | gist | hash | brin` (docs/sql.md "Index methods"). SQLite's
 * indexes are B-trees. What each method becomes is said in the statement's `notices`:
 * - `gin` / `gist` on jsonb or array (`text[]`) columns: nothing is built — a B-tree over a
 *   JSON text serves no `@>`, `?` or `&&` (they scan the table); the statement succeeds so
 *   migrations written for Postgres run unchanged;
 * - `hash` and `brin`: a B-tree, which serves the same equality (hash) and range (brin) scans;
 * - operator classes are read only where they belong to the method (`jsonb_ops`,
 *   `jsonb_path_ops`, `array_ops` with gin); any other (`gin_trgm_ops`, `text_pattern_ops`) is refused by name.
 */

const GIN_OPCLASSES = new Set(['jsonb_ops', 'jsonb_path_ops', 'array_ops']);
const CONTAINERS = new Set(['jsonb', 'json', 'text[]', 'int4[]', 'int8[]', 'float8[]', 'numeric[]', 'bool[]', 'uuid[]']);

export function indexMethod(using: string, n: Node, em: Emitter, table: string): { skip: boolean; notice: string | null } {
  const cols = (n.index_columns as Node[] | undefined) ?? [];
  const opclasses = cols.map((c) => (typeof c.pe_opclass === 'string' ? c.pe_opclass : null));
  for (const c of cols) delete c.pe_opclass;
  for (const o of opclasses) {
    if (o === null) continue;
    if (!(using === 'gin' && GIN_OPCLASSES.has(o))) throw unsupported(`operator class ${o} (USING ${using})`);
  }
  if (using === 'btree') return { skip: false, notice: null };
  if (using === 'hash' || using === 'brin') {
    return { skip: false, notice: `index method ${using} is built as a B-tree index (SQLite's only kind), which serves the same ${using === 'hash' ? 'equality' : 'range'} scans` };
  }
  if (using !== 'gin' && using !== 'gist') throw unsupported(`index method ${using} (indexes here are B-trees)`);
  const known = em.opts.schema(table);
  const names = cols.map((c) => {
    if (c.type !== 'column_ref') throw unsupported(`index method ${using} on an expression (only jsonb or array columns)`);
    return columnName(c);
  });
  for (const name of names) {
    const type = known?.find((k) => k.name === name)?.type ?? null;
    if (type === null || !CONTAINERS.has(type)) throw unsupported(`index method ${using} on column "${name}" of type ${type ?? 'unknown'} (only jsonb or array columns)`);
  }
  if (n.index_type) throw unsupported(`UNIQUE … USING ${using}`);
  return {
    skip: true,
    notice: `index method ${using} has no counterpart here: no index was built on ${table}(${names.join(', ')}); jsonb and array operators (@>, ?, &&) on it scan the table`,
  };
}
