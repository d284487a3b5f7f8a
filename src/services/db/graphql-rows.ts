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
  /** Per request: batched by-key loads (foreign keys) and grouped lists (reverse relations), keyed by table, column and arguments. */
  loaders: Map<string, Loader | GroupLoader>;
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

/** The arguments of a list field. */
export interface ListArgs {
  where?: Record<string, Record<string, unknown> | null> | null;
  order?: string | null;
  limit?: number | null;
  offset?: number | null;
}

/** A list field's arguments → the rows API's list parameters. */
export function listParams(args: ListArgs): URLSearchParams {
  const q = filters(args.where);
  if (args.order) q.set('order', args.order);
  if (args.limit !== undefined && args.limit !== null) q.set('limit', String(args.limit));
  if (args.offset !== undefined && args.offset !== null) q.set('offset', String(args.offset));
  return q;
}

/**
 * Runs `flush` once the current batch of resolvers has run: after every promise job queued
 * so far, so the resolvers of one level (which graphql calls from several promise jobs) all
 * enqueue their keys first (DataLoader's scheduling).
 */
const later = (flush: () => void): void => {
  void Promise.resolve().then(() => process.nextTick(flush));
};

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
        later(() => this.#flush());
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
  let l = ctx.loaders.get(key) as Loader | undefined;
  if (!l) {
    l = new Loader(db, t, column, ctx);
    ctx.loaders.set(key, l);
  }
  return l;
}

/**
 * Batches the reverse-relation lists of one table, column and arguments in one tick into one
 * grouped query per 1000 parents (`DbService.listByKeys`: limit and offset per parent).
 */
class GroupLoader {
  #pending = new Map<string, { key: string | number; waiters: Array<{ resolve: (r: Row[]) => void; reject: (e: unknown) => void }> }>();
  #perRow = 0;
  #scheduled = false;
  constructor(
    readonly db: DbService,
    readonly t: TableInfo,
    readonly column: string,
    readonly params: URLSearchParams,
    readonly ctx: Ctx,
  ) {}

  /** The child rows of one parent key; `perRow` the fields selected under the list (counted as values). */
  load(key: string | number, perRow: number): Promise<Row[]> {
    return new Promise((resolve, reject) => {
      const k = String(key);
      const entry = this.#pending.get(k) ?? { key, waiters: [] };
      entry.waiters.push({ resolve, reject });
      this.#pending.set(k, entry);
      this.#perRow = Math.max(this.#perRow, perRow);
      if (!this.#scheduled) {
        this.#scheduled = true;
        later(() => this.#flush());
      }
    });
  }

  #flush(): void {
    const batch = this.#pending;
    const perRow = this.#perRow;
    this.#pending = new Map();
    this.#perRow = 0;
    this.#scheduled = false;
    const keys = [...batch.values()].map((e) => e.key);
    const found = new Map<string, Row[]>();
    try {
      for (let i = 0; i < keys.length; i += 1000) {
        const part = keys.slice(i, i + 1000);
        // note: at most one row past MAX_ROWS is read, and readRows then refuses the request.
        const cap = Math.max(1, MAX_ROWS - this.ctx.rows + 1);
        const rows = readRows(this.ctx, () => this.db.listByKeys(this.ctx.lease, this.ctx.auth, this.t.def.name, this.column, part, this.params, cap).map((r) => flat(this.t, r)), perRow);
        for (const row of rows) {
          const k = String(row[this.column]);
          const list = found.get(k);
          if (list) list.push(row);
          else found.set(k, [row]);
        }
      }
    } catch (err) {
      for (const e of batch.values()) for (const w of e.waiters) w.reject(err);
      return;
    }
    for (const [k, e] of batch) for (const w of e.waiters) w.resolve(found.get(k) ?? []);
  }
}

/** The request's grouped-list loader of a reverse relation with these arguments. */
export function children(ctx: Ctx, db: DbService, t: TableInfo, column: string, args: ListArgs): GroupLoader {
  const params = listParams(args);
  const key = `${t.def.name}.${column}?${params.toString()}`;
  let l = ctx.loaders.get(key) as GroupLoader | undefined;
  if (!l) {
    l = new GroupLoader(db, t, column, params, ctx);
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
