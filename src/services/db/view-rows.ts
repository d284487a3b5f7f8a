import { EdgeError, notFound } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import type { ProjectLease } from '../../project/registry.js';
import { quoteIdent } from '../../project/schemas.js';
import type { StoredView } from '../../sql/pg/views.js';
import { parseListQuery, type Filter, type ListQuery } from './filters.js';
import type { QueryResult, QueryService } from './query.js';

/**
 * A view's rows through the rows API (`GET /db/tables/{view}/rows[/{id}]`) and GraphQL
 * (docs/api.md "Views"). The list parameters become a Postgres SELECT over the view, run by
 * QueryService exactly as `POST /db/query` would run it for the caller: translated (the
 * view's tables under the caller's RLS), in the SQL worker pool with its time limit. Every
 * value is a bound parameter (`$n`), typed by its column as Postgres types it.
 *
 * A row is `{"id", "data"}` when the view has an `id` column (the other columns in `data`),
 * `{"data"}` otherwise. The default order is `id`, else every column in order.
 */
export class ViewRows {
  constructor(readonly query: QueryService) {}

  async list(lease: ProjectLease, auth: AuthContext, view: StoredView, params: URLSearchParams): Promise<string> {
    const q = parseListQuery(params);
    const rows = await this.rows(lease, auth, view, q);
    const more = rows.rows.length > q.limit;
    const list = more ? rows.rows.slice(0, q.limit) : rows.rows;
    const next = more && q.limit > 0 ? q.offset + q.limit : null;
    let out = `{"rows":[${list.map((r) => JSON.stringify(wireRow(view, r, rows.select))).join(',')}],"limit":${q.limit},"offset":${q.offset},"next_offset":${next}`;
    if (rows.total !== null) out += `,"total":${rows.total}`;
    return `${out}}`;
  }

  /** The rows of a list request (one more than the limit, to know next_offset), and the total when asked. */
  async rows(lease: ProjectLease, auth: AuthContext, view: StoredView, q: ListQuery): Promise<{ rows: Array<Record<string, unknown>>; select: string[]; total: number | null }> {
    const names = new Set(view.columns.map((c) => c.name));
    const values: unknown[] = [];
    const param = (v: unknown): string => {
      values.push(v);
      return `$${values.length}`;
    };
    const where = [...q.filters.map((f) => filterSql(f, names, view, param)), ...q.or.map((g) => `(${g.map((f) => filterSql(f, names, view, param)).join(' or ')})`)];
    const from = `from public.${quoteIdent(view.name)}${where.length ? ` where ${where.join(' and ')}` : ''}`;
    const select = q.select === null ? [...names] : selected(q.select, names);
    const cols = names.has('id') && !select.includes('id') ? ['id', ...select] : select;
    const order = q.order.length
      ? q.order.map((o) => `${column(o.field, names)} ${o.desc ? 'desc' : 'asc'}${o.nulls ? ` nulls ${o.nulls}` : ''}`).join(', ')
      : names.has('id')
        ? '"id"'
        : [...names].map(quoteIdent).join(', ');
    const list = `select ${cols.map(quoteIdent).join(', ')} ${from} order by ${order} limit ${param(q.limit + 1)} offset ${param(q.offset)}`;
    const sql = q.count ? `${list}; select count(*) as n ${from}` : list;
    const out = await this.query.execute(lease, auth, sql, values, this.query.budget(lease.projectId));
    const total = q.count ? Number((out[1] as QueryResult).rows[0]?.n ?? 0) : null;
    return { rows: out[0]!.rows, select, total };
  }

  async get(lease: ProjectLease, auth: AuthContext, view: StoredView, id: string): Promise<string> {
    if (!view.columns.some((c) => c.name === 'id')) throw new EdgeError('invalid_request', `view "${view.name}" has no id column: list its rows with filters`);
    const out = await this.query.execute(lease, auth, `select * from public.${quoteIdent(view.name)} where id = $1 limit 1`, [id], this.query.budget(lease.projectId));
    const row = out[0]!.rows[0];
    if (!row) throw notFound('row', id);
    return JSON.stringify(wireRow(view, row, view.columns.map((c) => c.name)));
  }
}

/** A result row → `{id, data}` (or `{data}` for a view without an id column). */
function wireRow(view: StoredView, r: Record<string, unknown>, select: string[]): { id?: unknown; data: Record<string, unknown> } {
  const data: Record<string, unknown> = {};
  for (const n of select) if (n !== 'id') data[n] = r[n];
  return view.columns.some((c) => c.name === 'id') ? { id: r.id, data } : { data };
}

function column(field: string[], names: ReadonlySet<string>): string {
  const n = field.join('.');
  if (field.length !== 1) throw new EdgeError('invalid_request', `"${n}": filters and order on a view name its columns (not fields inside them)`);
  if (!names.has(n)) throw new EdgeError('invalid_request', `unknown column "${n}"`);
  return quoteIdent(n);
}

function selected(select: string[][], names: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const path of select) {
    const n = path.join('.');
    if (path.length !== 1 || !names.has(n)) throw new EdgeError('invalid_request', `unknown column "${n}" in select`);
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

const COMPARE = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** One rows-API filter as Postgres SQL over the view's column; its values bound as `$n`. */
function filterSql(f: Filter, names: ReadonlySet<string>, view: StoredView, param: (v: unknown) => string): string {
  const c = column(f.field, names);
  const type = view.columns.find((x) => x.name === f.field[0])?.type ?? null;
  const v = f.values[0]?.text ?? '';
  switch (f.op) {
    case 'eq':
    case 'neq':
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return `${c} ${COMPARE[f.op]} ${param(v)}`;
    case 'in':
      return `${c} in (${f.values.map((x) => param(x.text)).join(', ')})`;
    case 'is':
      return `${c} is ${v === 'null' ? 'null' : v === 'true' ? 'true' : 'false'}`;
    case 'like':
      return `${c}::text like ${param(v.replaceAll('*', '%'))}`;
    case 'ilike':
      return `${c}::text ilike ${param(v.replaceAll('*', '%'))}`;
    case 'contains':
      if (type === 'jsonb' || type === 'json') {
        let parsed: unknown;
        try {
          parsed = f.values[0]!.quoted ? v : JSON.parse(v);
        } catch {
          parsed = v;
        }
        return `${c} @> ${param(JSON.stringify(Array.isArray(parsed) ? parsed : [parsed]))}::jsonb`;
      }
      if (type === 'text' || type === 'uuid' || type === null) return `strpos(${c}::text, ${param(v)}) > 0`;
      throw new EdgeError('invalid_request', `contains does not apply to column "${f.field[0]!}"`);
  }
}
