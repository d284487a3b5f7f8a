type Astify = { astify(sql: string, opt: object): unknown };

/**
 * Parses PostgreSQL with node-sql-parser. Its PostgreSQL grammar does not read
 * `ALTER TABLE t RENAME COLUMN a TO b`; its MySQL grammar does, so when the PostgreSQL
 * parse fails, a MySQL parse that yields exactly that one statement (and nothing else)
 * is accepted. Any other outcome throws the PostgreSQL parser's error.
 *
 * note: sent to the SQL worker as `toString()` (see functions.ts): self-contained.
 */
export function parseWithFallback(pg: Astify, mysql: Astify, sql: string): unknown {
  try {
    return pg.astify(sql, { database: 'postgresql' });
  } catch (err) {
    let alt: unknown;
    try {
      alt = mysql.astify(sql, { database: 'mysql' });
    } catch {
      throw err;
    }
    const one = (Array.isArray(alt) ? (alt.length === 1 ? alt[0] : null) : alt) as { type?: string; expr?: Array<{ action?: string; resource?: string }> } | null;
    const e = one?.expr;
    if (one?.type === 'alter' && Array.isArray(e) && e.length === 1 && e[0]!.action === 'rename' && e[0]!.resource === 'column') return { ...one, keyword: 'table' };
    throw err;
  }
}
