import type { ProjectLease } from '../../project/registry.js';
import { jsonPathLiteral, quoteIdent } from '../../sql/quote.js';
import { stampColumns, type TableInfo } from '../../sql/table-model.js';

/**
 * The SQL of realtime: a change's stored-form row image (change-log.ts `storedImage`) read back
 * as the table's columns, so the WHERE terms the rows API compiles (filters and the select
 * policy, src/services/db/list-query.ts `buildWhere`) run on it unchanged, by SQLite, in the project file
 * (a policy may read other tables).
 */
export const realtimeStore = {
  /**
   * `SELECT 1 FROM (<the image as the table's columns>) AS "<table>" WHERE <terms>`: the image
   * is the first parameter (it is first in the text), the terms' values follow.
   */
  visibilitySql(t: TableInfo, where: readonly string[]): string {
    const cols = t.def.kind === 'document' ? ['id', 'data', 'created_at', 'updated_at'] : ['id', ...t.def.columns.map((c) => c.name), ...stampColumns(t.def)];
    const bytea = new Set(t.def.columns.filter((c) => c.type === 'bytea').map((c) => c.name));
    const list = cols
      .map((c) => {
        // note: a blob is kept in the image as upper-case hex; unhex() gives the bytes back.
        const v = `j ->> ${jsonPathLiteral([c])}`;
        return `${bytea.has(c) ? `unhex(${v})` : v} AS ${quoteIdent(c)}`;
      })
      .join(', ');
    return `SELECT 1 FROM (SELECT ${list} FROM (SELECT ? AS j)) AS ${quoteIdent(t.def.name)} WHERE ${where.join(' AND ')}`;
  },
  /** Whether the image passes the terms of `sql` (built by visibilitySql) with their values. */
  visible(p: ProjectLease, sql: string, image: string, params: readonly unknown[]): boolean {
    return p.stmt(sql).pluck().get(image, ...params) !== undefined;
  },
};
