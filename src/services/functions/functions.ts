import { createHash } from 'node:crypto';
import type { Config } from '../../config.js';
import { EdgeError, invalidField, notFound, payloadTooLarge } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import { requireScope } from '../../edge/scopes.js';
import type { EventBus } from '../../events/bus.js';
import type { OutboundClient } from '../../net/outbound.js';
import type { ProjectLease } from '../../project/registry.js';
import { VERSION } from '../../version.js';
import type { DbService } from '../db/db.js';
import type { QueryService } from '../db/query.js';
import { Admission } from './gate.js';
import { SandboxProcess, type HostSide } from './sandbox-process.js';
import { errorToWire, MAX_LOG_BYTES, MAX_LOG_LINES, MAX_RESULT_BYTES, type LogLine, type SecretWire } from './sandbox-wire.js';
import { functionsStore, type VersionMeta, type VersionRow } from './store.js';

/** The pinned limits of docs/api.md "Functions and jobs". */
export const MAX_SOURCE_BYTES = 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 5000;
export const MAX_TIMEOUT_MS = 30_000;
export const DEFAULT_MEMORY_MB = 64;
export const MIN_MEMORY_MB = 8;
export const MAX_MEMORY_MB = 256;
export const MAX_FETCH_CALLS = 10;
export const MAX_FETCH_BYTES = 5 * 1024 * 1024;
export const MAX_SECRETS = 50;
const NAME = /^[a-z][a-z0-9_-]{0,62}$/;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const RESERVED = new Set(['runtime', 'jobs']);
export const CTX_NAMES = ['user', 'db.list', 'db.get', 'db.insert', 'db.update', 'db.delete', 'db.query', 'secrets.get', 'fetch', 'log'] as const;

export type Access = 'key' | 'user' | 'service';
export interface FunctionOptions {
  timeout_ms: number;
  memory_mb: number;
  access: Access;
  secrets: string[];
  /** Kept as given (checked by the jobs part, `addOptionCheck`). */
  schedules?: unknown[];
  triggers?: unknown[];
}

/** What `ctx.secrets.get` reads: the secrets store's internal lookup (docs/api.md "ctx"). */
export interface SecretReader {
  get(lease: ProjectLease, name: string): string | null;
}

export interface DeployInput {
  source: string;
  language: 'js' | 'ts';
  options: Record<string, unknown>;
}

export interface Deployed {
  name: string;
  version: number;
  language: 'js' | 'ts';
  size: number;
  sha256: string;
  options: FunctionOptions;
  created_at: string;
}

export interface InvokeResult {
  result: unknown;
  logs: LogLine[];
  version: number;
  duration_ms: number;
}

export interface InvokeOptions {
  /** A past version; the current one when absent. */
  version?: number;
  /** Check the function's `access` option against the caller (HTTP invoke: yes; a job already did at enqueue). */
  checkAccess?: boolean;
}

/** The services `ctx` calls, as the HTTP routes call them. */
export interface CtxServices {
  db: DbService;
  query: QueryService;
  outbound: OutboundClient;
  secrets: SecretReader;
}

type OptionCheck = (name: string, options: Record<string, unknown>) => void;

/** What an invoke needs of a version: its row without source and code, options parsed. */
interface Meta {
  readonly id: number;
  readonly version: number;
  readonly options: FunctionOptions;
  /** Date.now() of the read; trusted for META_TRUST_MS. */
  readonly readAt: number;
}

/**
 * Per open project (`lease.cache`): the versions invoked, by `name` (the current one) or
 * `name@version`. This process's deploys and deletes empty it; a change made by
 * another process is seen within META_TRUST_MS (the rule of project/schema-version.ts), and
 * the code itself is read only at a cold start (the warm isolate is named by the version's id,
 * never reused).
 */
const METAS = 'functions.metas';
const newMetas = (): Map<string, Meta> => new Map();
const META_TRUST_MS = 1000;
const MAX_METAS = 4096;

/**
 * Deploy, list, delete and invoke functions (docs/api.md "Functions and jobs"). The sandbox
 * is sandbox.ts; `ctx` calls the db and query services with the caller's own AuthContext, so
 * scopes and RLS apply as on `/db/...`.
 */
export class FunctionsService {
  readonly sandbox: SandboxProcess;
  readonly #admission: Admission;
  readonly #svc: CtxServices;
  readonly #checks: OptionCheck[] = [];
  readonly #onDeployed: ((lease: ProjectLease, fn: Deployed) => void)[] = [];
  readonly #onDeleted: ((lease: ProjectLease, name: string) => void)[] = [];

  constructor(config: Config, bus: EventBus, svc: CtxServices, log: (msg: string, err?: unknown) => void = () => {}) {
    this.sandbox = new SandboxProcess({ maxIsolates: config.functionsMaxIsolates, idleMs: config.functionsIdleMs, concurrency: config.functionsConcurrency }, log);
    this.#admission = new Admission(config.functionsConcurrency, config.functionsQueue);
    this.#svc = svc;
    bus.on('project.deleted', (e) => this.sandbox.drop((key) => key.startsWith(`${e.projectId}:`)));
  }

  /** Lets another part validate an option it owns (`schedules`, `triggers`): throw `invalid_field`. */
  addOptionCheck(check: OptionCheck): void {
    this.#checks.push(check);
  }

  /** Runs after a deploy commits (e.g. to index its schedules). */
  onDeployed(fn: (lease: ProjectLease, fn: Deployed) => void): void {
    this.#onDeployed.push(fn);
  }

  /** Runs after a delete commits (e.g. to mark its queued jobs dead). */
  onDeleted(fn: (lease: ProjectLease, name: string) => void): void {
    this.#onDeleted.push(fn);
  }

  setSecrets(reader: SecretReader): void {
    this.#svc.secrets = reader;
  }

  close(): void {
    this.sandbox.close();
  }

  runtime(): unknown {
    return {
      engine: 'isolated-vm',
      node: process.versions.node,
      v8: process.versions.v8,
      platform_edge: VERSION,
      languages: ['js', 'ts'],
      limits: {
        timeout_ms: { default: DEFAULT_TIMEOUT_MS, max: MAX_TIMEOUT_MS },
        memory_mb: { default: DEFAULT_MEMORY_MB, min: MIN_MEMORY_MB, max: MAX_MEMORY_MB },
        payload_bytes: MAX_RESULT_BYTES,
        source_bytes: MAX_SOURCE_BYTES,
        fetch_calls: MAX_FETCH_CALLS,
        fetch_response_bytes: MAX_FETCH_BYTES,
        log_lines: MAX_LOG_LINES,
        log_bytes: MAX_LOG_BYTES,
        concurrent_calls: this.#admission.limit,
      },
      ctx: [...CTX_NAMES],
    };
  }

  /** Validates, compiles (TypeScript through esbuild) and checks a source, then stores a new version. */
  async deploy(lease: ProjectLease, name: string, input: DeployInput): Promise<{ fn: Deployed; created: boolean }> {
    checkName(name);
    const size = Buffer.byteLength(input.source);
    if (size > MAX_SOURCE_BYTES) throw new EdgeError('payload_too_large', `the source is over ${MAX_SOURCE_BYTES} bytes`);
    if (size === 0 || input.source.trim() === '') throw invalidField('source', 'must be a non-empty string');
    const options = this.#options(name, input.options);
    const code = input.language === 'ts' ? await transformTs(input.source) : input.source;
    await this.sandbox.check(code);
    const sha256 = createHash('sha256').update(input.source).digest('hex');
    const { row, created } = functionsStore.deploy(
      lease,
      { name, language: input.language, source: input.source, code, size, sha256, options: JSON.stringify(options) },
      new Date().toISOString(),
    );
    lease.cache(METAS, newMetas).clear();
    const fn = deployed(row);
    for (const f of this.#onDeployed) f(lease, fn);
    return { fn, created };
  }

  list(lease: ProjectLease): { functions: unknown[] } {
    return {
      functions: functionsStore.list(lease).map((r) => ({ name: r.name, version: r.version, language: r.language, options: JSON.parse(r.options) as unknown, updated_at: r.updated_at })),
    };
  }

  get(lease: ProjectLease, name: string): unknown {
    const f = functionsStore.get(lease, name);
    if (f === null) throw notFound('function', name);
    const versions = functionsStore.versions(lease, name);
    const current = versions.find((v) => v.version === f.version)!;
    return {
      name: f.name,
      version: f.version,
      language: current.language,
      options: JSON.parse(current.options) as unknown,
      created_at: f.created_at,
      updated_at: f.updated_at,
      versions: versions.map((v) => ({ version: v.version, language: v.language, size: v.size, sha256: v.sha256, created_at: v.created_at })),
    };
  }

  /** The options of the current version (the jobs part reads them). */
  options(lease: ProjectLease, name: string): FunctionOptions | null {
    return this.#meta(lease, name, null)?.options ?? null;
  }

  /** The version's metadata from the per-project cache, read again when older than META_TRUST_MS. */
  #meta(lease: ProjectLease, name: string, version: number | null): Meta | null {
    const metas = lease.cache(METAS, newMetas);
    const key = version === null ? name : `${name}@${version}`;
    const now = Date.now();
    const hit = metas.get(key);
    if (hit !== undefined && now - hit.readAt < META_TRUST_MS) return hit;
    const row = functionsStore.version(lease, name, version);
    const meta = row === null ? null : metaOf(row, now);
    // note: misses are not kept (a name nobody deployed costs its small read each time).
    if (meta === null) metas.delete(key);
    else {
      if (metas.size >= MAX_METAS) metas.clear();
      metas.set(key, meta);
    }
    return meta;
  }

  delete(lease: ProjectLease, name: string): void {
    const ids = functionsStore.delete(lease, name);
    lease.cache(METAS, newMetas).clear();
    if (ids === null) throw notFound('function', name);
    const keys = new Set(ids.map((id) => `${lease.projectId}:${id}`));
    this.sandbox.drop((key) => keys.has(key));
    for (const f of this.#onDeleted) f(lease, name);
  }

  /**
   * Runs a function as `caller` (docs/api.md "Invoke"): `ctx.db` acts with the caller's
   * AuthContext (scopes and RLS as on `/db/...`). Throws EdgeErrors: 404, 401/403 (access),
   * 429 (the project's calls are all busy and its queue is full), `function_error`,
   * `function_timeout`, `function_out_of_memory` (with `beside.logs`).
   */
  async invoke(lease: ProjectLease, name: string, args: unknown, caller: AuthContext, opts: InvokeOptions = {}): Promise<InvokeResult> {
    const out = await this.#invoke(lease, name, args, caller, opts);
    let result: unknown;
    try {
      result = JSON.parse(out.json);
    } catch {
      throw new EdgeError('function_error', 'the result is not JSON', { beside: { logs: out.logs } });
    }
    return { result, logs: out.logs, version: out.version, duration_ms: out.duration_ms };
  }

  /**
   * `invoke`'s answer as the JSON text of `{result, logs, version, duration_ms}` (the HTTP
   * route): the result's JSON, made by the isolate's own `JSON.stringify` (taken before the
   * user's module ran, so always JSON), goes out as it came, not parsed and written again.
   */
  async invokeText(lease: ProjectLease, name: string, args: unknown, caller: AuthContext, opts: InvokeOptions = {}): Promise<string> {
    const out = await this.#invoke(lease, name, args, caller, opts);
    return `{"result":${out.json},"logs":${JSON.stringify(out.logs)},"version":${out.version},"duration_ms":${out.duration_ms}}`;
  }

  async #invoke(lease: ProjectLease, name: string, args: unknown, caller: AuthContext, opts: InvokeOptions): Promise<{ json: string; logs: LogLine[]; version: number; duration_ms: number }> {
    const row = this.#meta(lease, name, opts.version ?? null);
    if (row === null) throw opts.version === undefined ? notFound('function', name) : notFound('version', `${name}@${opts.version}`);
    const options = row.options;
    if (opts.checkAccess !== false) checkAccess(options.access, caller);
    const argsJson = JSON.stringify(args ?? null);
    if (Buffer.byteLength(argsJson) > MAX_RESULT_BYTES) throw payloadTooLarge(MAX_RESULT_BYTES);
    const userJson = caller.user === null ? 'null' : JSON.stringify({ id: caller.user.id, role: caller.user.role });
    // note: the call takes its turn among the project's calls in the sandbox process (sandbox-child.ts);
    // here only how many are in there, running or waiting, is bounded (429 past it).
    const release = this.#admission.enter(lease.projectId);
    try {
      const host = this.#host(lease, caller, options);
      const out = await this.sandbox.run(
        lease.projectId,
        { key: `${lease.projectId}:${row.id}`, code: () => codeOf(lease, row.id, name), memoryMb: options.memory_mb, timeoutMs: options.timeout_ms },
        argsJson,
        userJson,
        host,
      );
      return { json: out.json, logs: out.logs, version: row.version, duration_ms: out.ms };
    } finally {
      release();
    }
  }

  #options(name: string, o: Record<string, unknown>): FunctionOptions {
    const timeout = o.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 1 || timeout > MAX_TIMEOUT_MS) throw invalidField('timeout_ms', `must be an integer from 1 to ${MAX_TIMEOUT_MS}`);
    const memory = o.memory_mb ?? DEFAULT_MEMORY_MB;
    if (typeof memory !== 'number' || !Number.isInteger(memory) || memory < MIN_MEMORY_MB || memory > MAX_MEMORY_MB) {
      throw invalidField('memory_mb', `must be an integer from ${MIN_MEMORY_MB} to ${MAX_MEMORY_MB}`);
    }
    const access = o.access ?? 'key';
    if (access !== 'key' && access !== 'user' && access !== 'service') throw invalidField('access', 'must be "key", "user" or "service"');
    const secrets = o.secrets ?? [];
    if (!Array.isArray(secrets) || secrets.length > MAX_SECRETS || !secrets.every((s) => typeof s === 'string' && SECRET_NAME.test(s))) {
      throw invalidField('secrets', `must be an array of at most ${MAX_SECRETS} secret names`);
    }
    const out: FunctionOptions = { timeout_ms: timeout, memory_mb: memory, access, secrets: [...new Set(secrets as string[])] };
    for (const k of ['schedules', 'triggers'] as const) {
      if (o[k] === undefined) continue;
      if (!Array.isArray(o[k])) throw invalidField(k, 'must be an array');
      out[k] = o[k];
    }
    for (const check of this.#checks) check(name, o);
    return out;
  }

  /** The host side of one call's `ctx`: every operation as the caller. */
  #host(lease: ProjectLease, caller: AuthContext, options: FunctionOptions): HostSide {
    const { db, query, outbound, secrets } = this.#svc;
    let fetches = 0;
    const parsed = (text: string): unknown => JSON.parse(text) as unknown;
    return {
      // note: the values of the secrets the function lists, read as the call starts (the sandbox
      // process answers `ctx.secrets.get` from them; a name not listed is refused there).
      secrets: () => {
        const out: Record<string, SecretWire> = {};
        for (const name of options.secrets) {
          try {
            out[name] = secrets.get(lease, name);
          } catch (err) {
            out[name] = { error: errorToWire(err) };
          }
        }
        return out;
      },
      op: async (op, payload, remaining) => {
        const p = (payload ?? {}) as Record<string, unknown>;
        switch (op) {
          case 'db.list':
            requireScope(caller.scopes, 'data:read');
            return parsed(await db.list(lease, caller, str(p.table, 'table'), listQuery(p.query)));
          case 'db.get':
            requireScope(caller.scopes, 'data:read');
            return parsed(await db.get(lease, caller, str(p.table, 'table'), rowId(p.id)));
          case 'db.insert':
            requireScope(caller.scopes, 'data:write');
            return parsed(db.insert(lease, caller, str(p.table, 'table'), { data: p.data }));
          case 'db.update':
            requireScope(caller.scopes, 'data:write');
            return parsed(db.update(lease, caller, str(p.table, 'table'), rowId(p.id), { data: p.data }));
          case 'db.delete':
            requireScope(caller.scopes, 'data:write');
            db.delete(lease, caller, str(p.table, 'table'), rowId(p.id));
            return { deleted: true };
          case 'db.query': {
            requireScope(caller.scopes, 'data:read');
            const params = p.params ?? [];
            if (!Array.isArray(params)) throw invalidField('params', 'must be an array');
            return query.run(lease, caller, str(p.sql, 'sql'), params, query.budget(lease.projectId, Math.min(remaining, query.timeoutMs)));
          }
          case 'fetch': {
            if (++fetches > MAX_FETCH_CALLS) throw new EdgeError('rate_limited', `ctx.fetch: at most ${MAX_FETCH_CALLS} calls per invocation`);
            const init = (p.init ?? {}) as Record<string, unknown>;
            const res = await outbound.request({
              purpose: 'function',
              url: str(p.url, 'url'),
              method: typeof init.method === 'string' ? init.method.toUpperCase() : 'GET',
              headers: headersOf(init.headers),
              body: typeof init.body === 'string' ? init.body : undefined,
              redirect: init.redirect === 'manual' ? 'manual' : 'follow',
              timeoutMs: remaining,
              maxResponseBytes: MAX_FETCH_BYTES,
            });
            return { status: res.status, url: res.url, headers: res.headers, body: res.body.toString('utf8') };
          }
          default:
            throw new EdgeError('invalid_request', 'unknown operation');
        }
      },
    };
  }
}

function checkName(name: string): void {
  if (!NAME.test(name)) throw invalidField('name', 'must match [a-z][a-z0-9_-]{0,62}');
  if (RESERVED.has(name)) throw invalidField('name', `"${name}" is reserved`);
}

function checkAccess(access: Access, caller: AuthContext): void {
  if (access === 'user' && caller.user === null) throw new EdgeError('unauthorized', 'this function needs a signed-in user (Authorization: Bearer)');
  if (access === 'service' && caller.role !== 'service_role') throw new EdgeError('forbidden', 'this function needs the service role');
}

const metaOf = (row: VersionMeta, readAt: number): Meta => ({ id: row.id, version: row.version, options: JSON.parse(row.options) as FunctionOptions, readAt });

/** A version's code at a cold start; 404 when another process deleted it since its metadata was read. */
function codeOf(lease: ProjectLease, id: number, name: string): string {
  const code = functionsStore.code(lease, id);
  if (code === null) {
    lease.cache(METAS, newMetas).clear();
    throw notFound('function', name);
  }
  return code;
}

const deployed = (row: VersionRow): Deployed => ({
  name: row.name,
  version: row.version,
  language: row.language,
  size: row.size,
  sha256: row.sha256,
  options: JSON.parse(row.options) as FunctionOptions,
  created_at: row.created_at,
});

async function transformTs(source: string): Promise<string> {
  const esbuild = await import('esbuild');
  try {
    const out = await esbuild.transform(source, { loader: 'ts', format: 'esm', target: 'es2022', sourcefile: 'function.ts' });
    return out.code;
  } catch (err) {
    const first = (err as { errors?: { text: string; location: { line: number; column: number } | null }[] }).errors?.[0];
    if (first === undefined) throw new EdgeError('invalid_source', 'the TypeScript source does not compile');
    if (first.location === null) throw new EdgeError('invalid_source', first.text);
    const { line, column } = first.location;
    // note: esbuild counts columns from 0; V8 (and this API) from 1.
    throw new EdgeError('invalid_source', `${first.text} (line ${line}, column ${column + 1})`, { details: { line, column: column + 1 } });
  }
}

const str = (v: unknown, field: string): string => {
  if (typeof v !== 'string' || v === '') throw invalidField(field, 'must be a non-empty string');
  return v;
};

const rowId = (v: unknown): string => (Number.isSafeInteger(v) ? String(v) : str(v, 'id'));

/** `ctx.db.list`'s query object as the REST query string (`{filter: 'done.eq.true', limit: 10}`). */
function listQuery(q: unknown): URLSearchParams {
  const out = new URLSearchParams();
  if (q === undefined || q === null) return out;
  if (typeof q !== 'object' || Array.isArray(q)) throw invalidField('query', 'must be an object of list parameters');
  for (const [k, v] of Object.entries(q)) {
    for (const x of Array.isArray(v) ? v : [v]) {
      if (typeof x !== 'string' && typeof x !== 'number' && typeof x !== 'boolean') throw invalidField(`query.${k}`, 'must be a string, a number or an array of them');
      out.append(k, String(x));
    }
  }
  return out;
}

function headersOf(h: unknown): Record<string, string> | undefined {
  if (h === undefined || h === null) return undefined;
  if (typeof h !== 'object' || Array.isArray(h)) throw invalidField('headers', 'must be an object of strings');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) {
    if (typeof v !== 'string') throw invalidField(`headers.${k}`, 'must be a string');
    out[k] = v;
  }
  return out;
}
