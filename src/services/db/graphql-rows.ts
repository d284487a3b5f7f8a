import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import { EdgeError } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import type { ProjectLease } from '../../project/registry.js';
import type { DbService } from './db.js';
import type { TableInfo } from '../../sql/table-model.js';

/**
 * How the GraphQL resolvers read rows through DbService: the request's context, wire rows
 * flattened to GraphQL objects, where-inputs as the rows API's filters, by-key loads batched
 * per tick (no N+1), and the rows and values read counted against the caps below, which
 * `run` (graphql.ts) checks again after execution.
 */
/** Rows read per request (lists and nested foreign keys), as raw SQL's 10,000 per statement. */
export const MAX_ROWS = 10_000;
/**
 * Values a request's lists produce (rows × the fields selected under the list, nested
 * foreign keys included): graphql-js resolves each one on the main thread (about 5 µs
 * each), so this bounds execution; a 1000-row list of 50 fields fits.
 */
export const MAX_VALUES = 50_000;

/** The context of one request's execution. */
export interface Ctx {
  lease: ProjectLease;
  auth: AuthContext;
  /** Per request: batched by-id loads, keyed by table. */
  loaders: Map<string, Loader>;
  /** Rows read so far; past MAX_ROWS the request is refused. */
  rows: number;
  /** Values the lists read so far will produce; past MAX_VALUES the request is refused. */
  values: number;
}

export type Row = Record<string, unknown>;
export interface Wire {
  id: string | number;
  data: Record<string, unknown>;
  created_at?: string;
  updated_at?: string;
}

/** A wire row → the GraphQL object: relational columns flattened beside id and timestamps. */
export function flat(t: TableInfo, r: Wire): Row {
  if (t.def.kind === 'document') return { id: r.id, data: r.data, created_at: r.created_at, updated_at: r.updated_at };
  if (t.def.stamps === false) return { ...r.data, id: r.id };
  return { ...r.data, id: r.id, created_at: r.created_at, updated_at: r.updated_at };
}

export const parsed = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T));
const quote = (v: unknown): string => `"${String(v).replace(/[\\"]/g, '\\$&')}"`;

/** Where-input → the rows API's filter strings (`col.op.value`, values quoted). */
export function filters(where: Record<string, Record<string, unknown> | null> | null | undefined): URLSearchParams {
  const q = new URLSearchParams();
  for (const [col, ops] of Object.entries(where ?? {})) {
    for (const [op, v] of Object.entries(ops ?? {})) {
      if (v === undefined) continue;
      if (op === 'in') q.append('filter', `${col}.in.(${(v as unknown[]).map(quote).join(',')})`);
      else if (op === 'is') q.append('filter', `${col}.is.${String(v)}`);
      else if (op === 'contains') q.append('filter', `${col}.contains.${typeof v === 'string' ? quote(v) : JSON.stringify(v)}`);
      else q.append('filter', `${col}.${op}.${v === null ? 'null' : typeof v === 'object' ? quote(JSON.stringify(v)) : quote(v)}`);
    }
  }
  return q;
}

/** Batches the by-key loads of one table in one tick into one list query (`key.in.(…)`). */
class Loader {
  #pending = new Map<string, Array<{ resolve: (r: Row | null) => void; reject: (e: unknown) => void }>>();
  #scheduled = false;
  constructor(
    readonly db: DbService,
    readonly t: TableInfo,
    readonly column: string,
    readonly ctx: Ctx,
  ) {}

  load(key: string): Promise<Row | null> {
    return new Promise((resolve, reject) => {
      const waiters = this.#pending.get(key) ?? [];
      waiters.push({ resolve, reject });
      this.#pending.set(key, waiters);
      if (!this.#scheduled) {
        this.#scheduled = true;
        // note: resolvers of one level run in the same tick, so one microtask sees all their keys.
        queueMicrotask(() => this.#flush());
      }
    });
  }

  #flush(): void {
    const batch = this.#pending;
    this.#pending = new Map();
    this.#scheduled = false;
    const keys = [...batch.keys()];
    const found = new Map<string, Row>();
    try {
      for (let i = 0; i < keys.length; i += 1000) {
        const part = keys.slice(i, i + 1000);
        const q = new URLSearchParams({ limit: '1000', filter: `${this.column}.in.(${part.map(quote).join(',')})` });
        const rows = readRows(this.ctx, () => parsed<{ rows: Wire[] }>(this.db.list(this.ctx.lease, this.ctx.auth, this.t.def.name, q)).rows.map((r) => flat(this.t, r)));
        for (const row of rows) found.set(String(row[this.column]), row);
      }
    } catch (err) {
      for (const waiters of batch.values()) for (const w of waiters) w.reject(err);
      return;
    }
    for (const [k, waiters] of batch) for (const w of waiters) w.resolve(found.get(k) ?? null);
  }
}

export function loader(ctx: Ctx, db: DbService, t: TableInfo, column: string): Loader {
  const key = `${t.def.name}.${column}`;
  let l = ctx.loaders.get(key);
  if (!l) {
    l = new Loader(db, t, column, ctx);
    ctx.loaders.set(key, l);
  }
  return l;
}

/**
 * Counts rows read against MAX_ROWS before a read: once past it, every further read fails and
 * `run` refuses the whole request, so at most one list (1000 rows) is read past the cap.
 * A list (`perRow`: the fields selected under it) also counts its values against
 * MAX_VALUES, and fails before graphql resolves them.
 */
export function readRows(ctx: Ctx, read: () => Row[], perRow = 0): Row[] {
  if (ctx.rows > MAX_ROWS) throw new EdgeError('invalid_request', `the query reads more than ${MAX_ROWS} rows`);
  if (ctx.values > MAX_VALUES) throw new EdgeError('invalid_request', `the query returns more than ${MAX_VALUES} values`);
  const rows = read();
  ctx.rows += rows.length;
  ctx.values += rows.length * perRow;
  if (ctx.values > MAX_VALUES) throw new EdgeError('invalid_request', `the query returns more than ${MAX_VALUES} values`);
  return rows;
}

/** The fields selected under a field, at every depth, fragments expanded (at most MAX_FIELDS: `limits` ran). */
export function selected(info: GraphQLResolveInfo): number {
  let n = 0;
  const walk = (set: SelectionSetNode | undefined, seen: ReadonlySet<string>): void => {
    for (const sel of set?.selections ?? []) {
      if (sel.kind === Kind.FIELD) {
        n++;
        walk(sel.selectionSet, seen);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) walk(sel.selectionSet, seen);
      else if (!seen.has(sel.name.value)) walk(info.fragments[sel.name.value]?.selectionSet, new Set([...seen, sel.name.value]));
    }
  };
  for (const node of info.fieldNodes) walk(node.selectionSet, new Set());
  return n;
}
