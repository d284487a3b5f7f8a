/**
 * The one error type of every layer and its one mapping to HTTP (docs/architecture.md "Layers").
 * Codes are stable API; docs/api.md lists them.
 */
const STATUS = {
  invalid_body: 400,
  invalid_field: 400,
  invalid_request: 400,
  outbound_blocked: 400,
  unsupported_sql: 400,
  invalid_source: 400,
  statement_timeout: 400,
  unauthorized: 401,
  invalid_credentials: 401,
  token_expired: 401,
  missing_scope: 401,
  rls_denied: 403,
  forbidden: 403,
  invalid_signature: 403,
  url_expired: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  provider_not_configured: 412,
  payload_too_large: 413,
  quota_exceeded: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  upgrade_required: 426,
  rate_limited: 429,
  headers_too_large: 431,
  internal: 500,
  function_error: 500,
  function_out_of_memory: 500,
  provider_unreachable: 502,
  response_too_large: 502,
  unavailable: 503,
  provider_timeout: 504,
  function_timeout: 504,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof STATUS;

export class EdgeError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;
  /** Fields sent beside `error` in the envelope (a function's `logs`, docs/api.md "Invoke"). */
  readonly beside: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown; beside?: Record<string, unknown> } = {},
  ) {
    // note: an EdgeError is an answer, not a fault: no stack trace is captured. Capturing one
    // walks and deoptimises-to-summarise every frame, which made each 401 or 404 cost about
    // three times a successful request (perf: TranslatedState) - cheap rejects matter under a
    // flood of bad keys. A cause keeps its own stack.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message, { cause: opts.cause });
    Error.stackTraceLimit = limit;
    this.name = 'EdgeError';
    this.code = code;
    this.status = STATUS[code];
    this.details = opts.details;
    this.headers = opts.headers;
    this.beside = opts.beside;
  }
}

export const statusOf = (code: ErrorCode): number => STATUS[code];

// Helpers named by meaning, so call sites read as what went wrong.
export const notFound = (what: string, name?: string): EdgeError =>
  new EdgeError('not_found', name === undefined ? `${what} not found` : `${what} "${name}" not found`);
export const invalidBody = (why: string): EdgeError => new EdgeError('invalid_body', why);
export const invalidField = (field: string, why: string): EdgeError =>
  new EdgeError('invalid_field', `${field}: ${why}`, { details: { field } });
export const unauthorized = (why = 'missing or invalid API key'): EdgeError => new EdgeError('unauthorized', why);
export const missingScope = (scope: string): EdgeError =>
  new EdgeError('missing_scope', `this request needs the "${scope}" scope`, { details: { scope } });
export const conflict = (why: string): EdgeError => new EdgeError('conflict', why);
export const payloadTooLarge = (limit: number): EdgeError =>
  new EdgeError('payload_too_large', `request body exceeds the limit of ${limit} bytes`);
export const methodNotAllowed = (allowed: readonly string[]): EdgeError =>
  new EdgeError('method_not_allowed', 'method not allowed on this path', { headers: { allow: allowed.join(', ') } });

export interface HttpError {
  status: number;
  headers: Record<string, string>;
  body: { error: { code: string; message: string; details?: Record<string, unknown> }; [beside: string]: unknown };
}

interface SqliteLike {
  code: string;
  message: string;
}

const isSqliteError = (e: unknown): e is SqliteLike =>
  e instanceof Error && e.name === 'SqliteError' && typeof (e as Partial<SqliteLike>).code === 'string';

/**
 * Maps any thrown value to the error envelope (docs/api.md "Errors"). The only place
 * errors become HTTP. Internal causes are returned separately for logging, never sent.
 */
export function toHttp(err: unknown, requestId: string): HttpError & { internal?: unknown } {
  const e = normalize(err);
  if (e.code === 'internal') {
    return {
      ...envelope(e, `internal error (request ${requestId})`),
      internal: err,
    };
  }
  return envelope(e, e.message);
}

function envelope(e: EdgeError, message: string): HttpError {
  const error: HttpError['body']['error'] = { code: e.code, message };
  // note: details of other codes stay internal, except an import's progress (`inserted`, docs/api.md "Importing rows") and a Postgres error's (`sqlstate`, docs/sql.md "Errors").
  if (e.details !== undefined && (e.code === 'invalid_field' || e.code === 'missing_scope' || e.code === 'unsupported_sql' || e.code === 'invalid_source' || 'inserted' in e.details || 'sqlstate' in e.details)) error.details = e.details;
  return { status: e.status, headers: { ...e.headers }, body: e.beside === undefined ? { error } : { error, ...e.beside } };
}

/** Turns a thrown value into an EdgeError; SQLite errors are mapped by their code, never by message. */
export function normalize(err: unknown): EdgeError {
  if (err instanceof EdgeError) return err;
  if (isSqliteError(err)) {
    // note: extended result codes, https://www.sqlite.org/rescode.html
    switch (err.code) {
      case 'SQLITE_CONSTRAINT_UNIQUE':
      case 'SQLITE_CONSTRAINT_PRIMARYKEY':
        return new EdgeError('conflict', 'a row with the same unique value already exists', { cause: err });
      case 'SQLITE_CONSTRAINT_FOREIGNKEY':
        return new EdgeError('conflict', 'the change violates a foreign key', { cause: err });
      case 'SQLITE_CONSTRAINT_NOTNULL':
      case 'SQLITE_CONSTRAINT_CHECK':
        return new EdgeError('invalid_field', 'a value violates a column constraint', { cause: err });
      case 'SQLITE_CONSTRAINT_TRIGGER': {
        // note: an SQL trigger's RAISE EXCEPTION (src/sql/pg/plpgsql.ts), whatever path wrote the row.
        const raised = /^pe_raise(?:\[([0-9A-Z]{5})\])?: (.*)$/s.exec(err.message);
        if (raised) return new EdgeError(raised[1] === '23502' ? 'invalid_field' : 'invalid_request', raised[2]!.slice(0, 300), { cause: err, details: { sqlstate: raised[1] ?? 'P0001' } });
        break;
      }
      case 'SQLITE_BUSY':
      case 'SQLITE_BUSY_SNAPSHOT':
      case 'SQLITE_LOCKED':
        return new EdgeError('unavailable', 'the database is busy, retry shortly', {
          cause: err,
          headers: { 'retry-after': '1' },
        });
      case 'SQLITE_ERROR':
        // note: SQLite's bound on trigger depth (recursive triggers, docs/sql.md "Recursion") is Postgres' 54001.
        if (err.message === 'too many levels of trigger recursion') return new EdgeError('invalid_request', 'stack depth limit exceeded', { cause: err, details: { sqlstate: '54001' } });
        break;
      // note: SQLITE_FULL is both a full disk (SQLite's unix VFS reports ENOSPC as SQLITE_FULL,
      // not as an I/O error) and a project at its size cap (PRAGMA max_page_count).
      case 'SQLITE_FULL':
        return new EdgeError('insufficient_storage', 'the database is full; the change was not made', { cause: err });
    }
  }
  return new EdgeError('internal', 'internal error', { cause: err });
}
