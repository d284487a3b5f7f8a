import { parseAddressRange } from './core/address-range.js';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { VERSION } from './version.js';

/** Which HTTP backend serves requests; `auto` picks native uWS when its binary loaded. */
export type HttpBackend = 'auto' | 'uws' | 'node';

/** Fixed-window limits on the auth endpoints (per client address, and per e-mail for login/register). */
export interface RateLimitConfig {
  readonly enabled: boolean;
  readonly windowS: number;
  /** Requests per window and client address. */
  readonly login: number;
  readonly register: number;
  readonly refresh: number;
  readonly anonymous: number;
  /** Login (and register) attempts per window and e-mail address. */
  readonly perEmail: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitConfig = {
  enabled: true,
  windowS: 300,
  login: 30,
  register: 30,
  refresh: 120,
  anonymous: 30,
  perEmail: 10,
};

/** Who makes an outbound HTTP request (src/net/outbound.ts); each has its own loopback rule. */
export const OUTBOUND_PURPOSES = ['webhook', 'function', 'push', 'oidc'] as const;
export type OutboundPurpose = (typeof OUTBOUND_PURPOSES)[number];
/** Connection timeouts and caps (docs/operations.md, "Connections and timeouts"). */
export const DEFAULT_HTTP_LIMITS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 10_000,
  maxConnections: 10_000,
  maxConnectionsPerIp: 4096,
  wsMaxBackpressure: 1024 * 1024,
  wsIdleTimeoutS: 60,
  wsMaxMessage: 64 * 1024,
} as const;

export interface Config {
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly publicUrl: string | null;
  readonly durability: 'normal' | 'full';
  readonly ephemeral: boolean;
  readonly http: HttpBackend;
  /** Default cap for JSON request bodies, bytes. */
  readonly maxJsonBody: number;
  /** Default cap for streamed request bodies (`body: 'stream'` routes, e.g. a table import), bytes. */
  readonly maxStreamBody: number;
  /** Maximum nesting depth accepted in a JSON body. */
  readonly maxJsonDepth: number;
  /** Allowed CORS origins; `['*']` allows any origin. */
  readonly corsOrigins: readonly string[];
  /** Close a project's database after it has been unused this long. */
  readonly projectIdleMs: number;
  readonly maxOpenProjects: number;
  /** How often the control database is polled for changes made by other processes. */
  readonly controlPollMs: number;
  /** In-memory live-log ring size per project, and the cap of its table. */
  readonly liveRingSize: number;
  readonly liveTableCap: number;
  /** Header names the fronting proxy uses for the visitor's location. */
  readonly geoHeaders: {
    readonly lat: readonly string[];
    readonly lon: readonly string[];
    readonly country: readonly string[];
  };
  /** Master key for encryption at rest (hex or base64, 32 bytes); null: read or create `master.key`. */
  readonly masterKey: string | null;
  readonly version: string;
  /** Called with the text of every SQL statement run on a project database (tests, diagnostics); null: off. */
  readonly sqlTrace: ((sql: string) => void) | null;
  /** Access-token lifetime, seconds (900 by the contract; a test may set it ≤ 0 to mint expired tokens). */
  readonly authAccessTtlS: number;
  /** Refresh-token lifetime, seconds (sliding: each refresh starts a new one). */
  readonly authRefreshTtlS: number;
  readonly rateLimit: RateLimitConfig;
  /** Reverse proxies whose forwarding header names the client (addresses or CIDR ranges); empty: none. */
  readonly trustedProxies: readonly string[];
  /** The header a trusted proxy names the client in (`x-forwarded-for` style, or a single address). */
  readonly clientIpHeader: string;
  /** Rows of each project's change log kept (the newest); older ones are pruned. At least 1. */
  readonly changeLogKeep: number;
  /**
   * Rows of a project's change log kept at most, whatever its consumer cursors still need:
   * past it, a lagging cursor loses the oldest rows and reads a gap (docs/api.md "Change log").
   */
  readonly changeLogCap: number;
  /** How often open projects' change logs are pruned, ms. */
  readonly changeLogPruneMs: number;
  /** Size cap of each project's database file, bytes (SQLite `max_page_count`); 0: none but the disk. */
  readonly maxProjectDbBytes: number;
  /** Largest stored object, bytes (the server's cap over every bucket's `file_size_limit`). */
  readonly storageMaxObject: number;
  /** Bytes of objects one project may store (`--storage-quota`); 0: none but the disk. */
  readonly storageQuota: number;
  /** The shortest `expires_in` of a signed URL, seconds (60; tests lower it). */
  readonly storageSignedMinS: number;
  /** Seconds in which a refresh token just rotated may be presented again and gets the pair it was already given. */
  readonly authRefreshReuseIntervalS: number;
  /** Worker threads that run caller SQL (`/db/query`, `db.query`). */
  readonly sqlWorkers: number;
  /**
   * SQL jobs one project may run at once. Default: all workers but one, so other projects
   * always find one free, and at most the cores but one, so one project's statements never
   * take every core from the main thread.
   */
  readonly sqlProjectJobs: number;
  /** SQL jobs one project may have waiting; beyond: 429 `rate_limited`. */
  readonly sqlProjectQueue: number;
  /** The SQL time budget of one request, ms (a JSON-RPC batch shares it; `timeout_ms` may lower it). */
  readonly sqlTimeoutMs: number;
  /** Purposes whose outbound requests may go to `127.0.0.1`, `localhost` or `[::1]` (also over http://). */
  readonly outboundLoopback: readonly OutboundPurpose[];
  /** Outbound requests: TCP connect limit, ms. */
  readonly outboundConnectTimeoutMs: number;
  /** Outbound requests: limit of one request from DNS to the response's last byte (redirects included), ms. */
  readonly outboundTimeoutMs: number;
  /** Outbound requests: largest response body read, bytes. */
  readonly outboundMaxResponseBytes: number;
  /** Webhooks (docs/operations.md "Webhooks"): limit of one delivery attempt, ms. */
  readonly webhookTimeoutMs: number;
  /** Webhooks: bytes of a target's answer read (the rest is dropped; the status counts). */
  readonly webhookMaxResponseBytes: number;
  /** Webhooks: the first retry's delay and the largest delay, ms (exponential backoff, full jitter). */
  readonly webhookRetryBaseMs: number;
  readonly webhookRetryCapMs: number;
  /** Webhooks: attempts of one delivery before it is `dead`. */
  readonly webhookMaxAttempts: number;
  /** Webhooks: seconds the previous secret keeps signing after a rotation (0: it stops at once). */
  readonly webhookSecretOverlapS: number;
  /** Webhooks: delivery attempts in flight at once (all projects). */
  readonly webhookConcurrency: number;
  /** Webhooks: seconds a finished (delivered, failed, dead) delivery is kept in the log; 0: no age limit. */
  readonly webhookLogRetentionS: number;
  /** Webhooks: finished deliveries kept per webhook, the newest; 0: no count limit. */
  readonly webhookLogKeep: number;
  /** Time a client has to send a request's headers, ms (node:http; uWS has its own 10 s). */
  readonly headersTimeoutMs: number;
  /** Time a client has to send a whole request, headers and body, ms (both backends); 0: none. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long, ms (node:http; uWS has its own 10 s). */
  readonly keepAliveTimeoutMs: number;
  /** Open connections at most (node:http); past it a new one is answered 503 and closed. 0: no cap. */
  readonly maxConnections: number;
  /** Open connections per client address at most (node:http; the TCP peer, so a proxy is one address). 0: no cap. */
  readonly maxConnectionsPerIp: number;
  /** WebSocket: bytes a socket may have queued outbound; past it the socket is closed (1006). */
  readonly wsMaxBackpressure: number;
  /** WebSocket: seconds without a frame (pings are sent meanwhile) before a socket is closed; 0: never. 0 or at least 8. */
  readonly wsIdleTimeoutS: number;
  /** WebSocket: largest message a client may send, bytes; past it the socket is closed with 1009. */
  readonly wsMaxMessage: number;
  /** Functions: calls one project may run at once (docs/api.md "Sandbox"). */
  readonly functionsConcurrency: number;
  /** Functions: calls one project may have waiting; beyond: 429 `rate_limited`. */
  readonly functionsQueue: number;
  /** Functions: a warm isolate unused this long is disposed, ms. */
  readonly functionsIdleMs: number;
  /** Functions: warm isolates kept at most (all projects); the least recently used goes first. */
  readonly functionsMaxIsolates: number;
  /** Function jobs run at once by this process (PLATFORM_EDGE_JOBS_CONCURRENCY). */
  readonly jobsConcurrency: number;
  /** Added to a function's timeout to make a claimed job's lease, ms (PLATFORM_EDGE_JOBS_LEASE_GRACE_MS). */
  readonly jobsLeaseGraceMs: number;
  /** The longest the job loop sleeps between looks for due jobs and schedules, ms. */
  readonly jobsPollMs: number;
  /** The job clock and jitter (tests inject a fake one); null: the system clock. */
  readonly jobsClock: { now(): number; random(): number } | null;
  /** Realtime: the SSE heartbeat comment interval, ms (docs/api.md "Realtime"). */
  readonly realtimeHeartbeatMs: number;
  /** Realtime: open streams (SSE and WebSocket) per project at most; past it 429. 0: no cap. */
  readonly realtimeMaxPerProject: number;
  /** Realtime: open streams per client address at most (all projects); past it 429. 0: no cap. */
  readonly realtimeMaxPerAddress: number;
  /** Image transforms: largest source in pixels over all frames, judged from the header before decoding. */
  readonly imageMaxPixels: number;
  /** Image transforms: a transform running longer fails with 503 (whole seconds, rounded up). */
  readonly imageTimeoutMs: number;
  /** Image transforms running at once, server-wide. */
  readonly imageConcurrency: number;
  /** Image transforms waiting for a slot; past this, 503 `unavailable` with `Retry-After`. */
  readonly imageQueue: number;
  /** Bytes of cached image variants per project (least recently used go first). */
  readonly imageCacheBytes: number;
  /** Seconds an unfinished multipart or TUS upload lives. */
  readonly uploadExpiryS: number;
}

export type ConfigOverrides = {
  -readonly [K in keyof Config]?: K extends 'rateLimit' ? Partial<RateLimitConfig> : Config[K];
};

const list = (v: string | undefined): string[] | undefined =>
  v === undefined ? undefined : v.split(',').map((s) => s.trim()).filter(Boolean);

function int(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${v}"`);
  return n;
}

/**
 * Builds the one frozen Config from explicit overrides (flags) and the environment.
 * The only module that reads `process.env` is this one (callers pass `env`).
 */
export function loadConfig(overrides: ConfigOverrides, env: NodeJS.ProcessEnv): Config {
  const geo = {
    lat: list(env.PLATFORM_EDGE_GEO_LAT_HEADERS) ?? ['cf-iplatitude', 'x-vercel-ip-latitude'],
    lon: list(env.PLATFORM_EDGE_GEO_LON_HEADERS) ?? ['cf-iplongitude', 'x-vercel-ip-longitude'],
    country: list(env.PLATFORM_EDGE_GEO_COUNTRY_HEADERS) ?? ['cf-ipcountry', 'x-vercel-ip-country'],
  };
  const durabilityEnv = env.PLATFORM_EDGE_DURABILITY;
  if (durabilityEnv !== undefined && durabilityEnv !== '' && durabilityEnv !== 'normal' && durabilityEnv !== 'full') {
    throw new Error(`PLATFORM_EDGE_DURABILITY must be normal or full, got "${durabilityEnv}"`);
  }
  const publicUrlEnv = env.PLATFORM_EDGE_PUBLIC_URL;
  const httpEnv = env.PLATFORM_EDGE_HTTP;
  if (httpEnv !== undefined && httpEnv !== '' && !['auto', 'uws', 'node'].includes(httpEnv)) {
    throw new Error(`PLATFORM_EDGE_HTTP must be auto, uws or node, got "${httpEnv}"`);
  }
  const base: Config = {
    host: env.PLATFORM_EDGE_HOST ?? '127.0.0.1',
    port: int(env.PLATFORM_EDGE_PORT, 'PLATFORM_EDGE_PORT') ?? 8787,
    dataDir: env.PLATFORM_EDGE_DATA ?? './.platform-edge',
    publicUrl: publicUrlEnv === undefined || publicUrlEnv === '' ? null : publicUrl(publicUrlEnv, 'PLATFORM_EDGE_PUBLIC_URL'),
    durability: (durabilityEnv || 'normal') as 'normal' | 'full',
    ephemeral: false,
    http: (httpEnv || 'auto') as HttpBackend,
    maxJsonBody: int(env.PLATFORM_EDGE_MAX_JSON_BODY, 'PLATFORM_EDGE_MAX_JSON_BODY') ?? 1024 * 1024,
    maxStreamBody: int(env.PLATFORM_EDGE_MAX_STREAM_BODY, 'PLATFORM_EDGE_MAX_STREAM_BODY') ?? 1024 * 1024 * 1024,
    maxJsonDepth: 64,
    corsOrigins: list(env.PLATFORM_EDGE_CORS_ORIGINS) ?? ['*'],
    projectIdleMs: int(env.PLATFORM_EDGE_PROJECT_IDLE_MS, 'PLATFORM_EDGE_PROJECT_IDLE_MS') ?? 10 * 60_000,
    maxOpenProjects: int(env.PLATFORM_EDGE_MAX_OPEN_PROJECTS, 'PLATFORM_EDGE_MAX_OPEN_PROJECTS') ?? 256,
    controlPollMs: 250,
    liveRingSize: 500,
    liveTableCap: 10_000,
    geoHeaders: geo,
    masterKey: env.PLATFORM_EDGE_MASTER_KEY ?? null,
    version: VERSION,
    sqlTrace: null,
    authAccessTtlS: 900,
    authRefreshTtlS: int(env.PLATFORM_EDGE_AUTH_REFRESH_TTL_S, 'PLATFORM_EDGE_AUTH_REFRESH_TTL_S') ?? 30 * 86_400,
    rateLimit: rateLimitFromEnv(env),
    trustedProxies: list(env.PLATFORM_EDGE_TRUSTED_PROXIES) ?? [],
    clientIpHeader: env.PLATFORM_EDGE_CLIENT_IP_HEADER || 'x-forwarded-for',
    changeLogKeep: int(env.PLATFORM_EDGE_CHANGE_LOG_KEEP, 'PLATFORM_EDGE_CHANGE_LOG_KEEP') ?? 100_000,
    changeLogCap: int(env.PLATFORM_EDGE_CHANGE_LOG_CAP, 'PLATFORM_EDGE_CHANGE_LOG_CAP') ?? 0,
    changeLogPruneMs: 60_000,
    maxProjectDbBytes: int(env.PLATFORM_EDGE_MAX_PROJECT_DB_BYTES, 'PLATFORM_EDGE_MAX_PROJECT_DB_BYTES') ?? 0,
    storageMaxObject: int(env.PLATFORM_EDGE_STORAGE_MAX_OBJECT, 'PLATFORM_EDGE_STORAGE_MAX_OBJECT') ?? 5 * 1024 * 1024 * 1024,
    storageQuota: int(env.PLATFORM_EDGE_STORAGE_QUOTA, 'PLATFORM_EDGE_STORAGE_QUOTA') ?? 0,
    storageSignedMinS: 60,
    authRefreshReuseIntervalS: int(env.PLATFORM_EDGE_AUTH_REFRESH_REUSE_INTERVAL_S, 'PLATFORM_EDGE_AUTH_REFRESH_REUSE_INTERVAL_S') ?? 10,
    sqlWorkers: int(env.PLATFORM_EDGE_SQL_WORKERS, 'PLATFORM_EDGE_SQL_WORKERS') ?? 3,
    // note: 0 stands for "derived from sqlWorkers" until the merge below.
    sqlProjectJobs: int(env.PLATFORM_EDGE_SQL_PROJECT_JOBS, 'PLATFORM_EDGE_SQL_PROJECT_JOBS') ?? 0,
    sqlProjectQueue: int(env.PLATFORM_EDGE_SQL_PROJECT_QUEUE, 'PLATFORM_EDGE_SQL_PROJECT_QUEUE') ?? 32,
    sqlTimeoutMs: int(env.PLATFORM_EDGE_SQL_TIMEOUT_MS, 'PLATFORM_EDGE_SQL_TIMEOUT_MS') ?? 5000,
    outboundLoopback: outboundLoopback(env.PLATFORM_EDGE_OUTBOUND_LOOPBACK),
    functionsConcurrency: int(env.PLATFORM_EDGE_FUNCTIONS_CONCURRENCY, 'PLATFORM_EDGE_FUNCTIONS_CONCURRENCY') ?? 4,
    functionsQueue: int(env.PLATFORM_EDGE_FUNCTIONS_QUEUE, 'PLATFORM_EDGE_FUNCTIONS_QUEUE') ?? 64,
    functionsIdleMs: int(env.PLATFORM_EDGE_FUNCTIONS_IDLE_MS, 'PLATFORM_EDGE_FUNCTIONS_IDLE_MS') ?? 300_000,
    functionsMaxIsolates: int(env.PLATFORM_EDGE_FUNCTIONS_MAX_ISOLATES, 'PLATFORM_EDGE_FUNCTIONS_MAX_ISOLATES') ?? 64,
    outboundConnectTimeoutMs: int(env.PLATFORM_EDGE_OUTBOUND_CONNECT_TIMEOUT_MS, 'PLATFORM_EDGE_OUTBOUND_CONNECT_TIMEOUT_MS') ?? 5000,
    outboundTimeoutMs: int(env.PLATFORM_EDGE_OUTBOUND_TIMEOUT_MS, 'PLATFORM_EDGE_OUTBOUND_TIMEOUT_MS') ?? 15_000,
    outboundMaxResponseBytes: int(env.PLATFORM_EDGE_OUTBOUND_MAX_RESPONSE_BYTES, 'PLATFORM_EDGE_OUTBOUND_MAX_RESPONSE_BYTES') ?? 5 * 1024 * 1024,
    webhookTimeoutMs: int(env.PLATFORM_EDGE_WEBHOOK_TIMEOUT_MS, 'PLATFORM_EDGE_WEBHOOK_TIMEOUT_MS') ?? 10_000,
    webhookMaxResponseBytes: int(env.PLATFORM_EDGE_WEBHOOK_MAX_RESPONSE_BYTES, 'PLATFORM_EDGE_WEBHOOK_MAX_RESPONSE_BYTES') ?? 64 * 1024,
    webhookRetryBaseMs: int(env.PLATFORM_EDGE_WEBHOOK_RETRY_BASE_MS, 'PLATFORM_EDGE_WEBHOOK_RETRY_BASE_MS') ?? 5000,
    webhookRetryCapMs: int(env.PLATFORM_EDGE_WEBHOOK_RETRY_CAP_MS, 'PLATFORM_EDGE_WEBHOOK_RETRY_CAP_MS') ?? 12 * 3_600_000,
    webhookMaxAttempts: int(env.PLATFORM_EDGE_WEBHOOK_MAX_ATTEMPTS, 'PLATFORM_EDGE_WEBHOOK_MAX_ATTEMPTS') ?? 10,
    webhookSecretOverlapS: int(env.PLATFORM_EDGE_WEBHOOK_SECRET_OVERLAP_S, 'PLATFORM_EDGE_WEBHOOK_SECRET_OVERLAP_S') ?? 86_400,
    webhookConcurrency: int(env.PLATFORM_EDGE_WEBHOOK_CONCURRENCY, 'PLATFORM_EDGE_WEBHOOK_CONCURRENCY') ?? 64,
    webhookLogRetentionS: int(env.PLATFORM_EDGE_WEBHOOK_LOG_RETENTION_S, 'PLATFORM_EDGE_WEBHOOK_LOG_RETENTION_S') ?? 7 * 86_400,
    webhookLogKeep: int(env.PLATFORM_EDGE_WEBHOOK_LOG_KEEP, 'PLATFORM_EDGE_WEBHOOK_LOG_KEEP') ?? 1000,
    headersTimeoutMs: int(env.PLATFORM_EDGE_HEADERS_TIMEOUT_MS, 'PLATFORM_EDGE_HEADERS_TIMEOUT_MS') ?? DEFAULT_HTTP_LIMITS.headersTimeoutMs,
    requestTimeoutMs: int(env.PLATFORM_EDGE_REQUEST_TIMEOUT_MS, 'PLATFORM_EDGE_REQUEST_TIMEOUT_MS') ?? DEFAULT_HTTP_LIMITS.requestTimeoutMs,
    keepAliveTimeoutMs: int(env.PLATFORM_EDGE_KEEP_ALIVE_TIMEOUT_MS, 'PLATFORM_EDGE_KEEP_ALIVE_TIMEOUT_MS') ?? DEFAULT_HTTP_LIMITS.keepAliveTimeoutMs,
    maxConnections: int(env.PLATFORM_EDGE_MAX_CONNECTIONS, 'PLATFORM_EDGE_MAX_CONNECTIONS') ?? DEFAULT_HTTP_LIMITS.maxConnections,
    maxConnectionsPerIp: int(env.PLATFORM_EDGE_MAX_CONNECTIONS_PER_IP, 'PLATFORM_EDGE_MAX_CONNECTIONS_PER_IP') ?? DEFAULT_HTTP_LIMITS.maxConnectionsPerIp,
    wsMaxBackpressure: int(env.PLATFORM_EDGE_WS_MAX_BACKPRESSURE, 'PLATFORM_EDGE_WS_MAX_BACKPRESSURE') ?? DEFAULT_HTTP_LIMITS.wsMaxBackpressure,
    wsIdleTimeoutS: int(env.PLATFORM_EDGE_WS_IDLE_TIMEOUT_S, 'PLATFORM_EDGE_WS_IDLE_TIMEOUT_S') ?? DEFAULT_HTTP_LIMITS.wsIdleTimeoutS,
    wsMaxMessage: int(env.PLATFORM_EDGE_WS_MAX_MESSAGE, 'PLATFORM_EDGE_WS_MAX_MESSAGE') ?? DEFAULT_HTTP_LIMITS.wsMaxMessage,
    jobsConcurrency: int(env.PLATFORM_EDGE_JOBS_CONCURRENCY, 'PLATFORM_EDGE_JOBS_CONCURRENCY') ?? 16,
    jobsLeaseGraceMs: int(env.PLATFORM_EDGE_JOBS_LEASE_GRACE_MS, 'PLATFORM_EDGE_JOBS_LEASE_GRACE_MS') ?? 30_000,
    jobsPollMs: 1000,
    jobsClock: null,
    realtimeHeartbeatMs: int(env.PLATFORM_EDGE_REALTIME_HEARTBEAT_MS, 'PLATFORM_EDGE_REALTIME_HEARTBEAT_MS') ?? 20_000,
    realtimeMaxPerProject: int(env.PLATFORM_EDGE_REALTIME_MAX_PER_PROJECT, 'PLATFORM_EDGE_REALTIME_MAX_PER_PROJECT') ?? 10_000,
    realtimeMaxPerAddress: int(env.PLATFORM_EDGE_REALTIME_MAX_PER_ADDRESS, 'PLATFORM_EDGE_REALTIME_MAX_PER_ADDRESS') ?? 1000,
    imageMaxPixels: int(env.PLATFORM_EDGE_IMAGE_MAX_PIXELS, 'PLATFORM_EDGE_IMAGE_MAX_PIXELS') ?? 50_000_000,
    imageTimeoutMs: int(env.PLATFORM_EDGE_IMAGE_TIMEOUT_MS, 'PLATFORM_EDGE_IMAGE_TIMEOUT_MS') ?? 10_000,
    imageConcurrency: int(env.PLATFORM_EDGE_IMAGE_CONCURRENCY, 'PLATFORM_EDGE_IMAGE_CONCURRENCY') ?? 2,
    imageQueue: int(env.PLATFORM_EDGE_IMAGE_QUEUE, 'PLATFORM_EDGE_IMAGE_QUEUE') ?? 16,
    imageCacheBytes: int(env.PLATFORM_EDGE_IMAGE_CACHE_BYTES, 'PLATFORM_EDGE_IMAGE_CACHE_BYTES') ?? 256 * 1024 * 1024,
    uploadExpiryS: int(env.PLATFORM_EDGE_UPLOAD_EXPIRY_S, 'PLATFORM_EDGE_UPLOAD_EXPIRY_S') ?? 86_400,
  };
  const merged = {
    ...base,
    ...stripUndefined(overrides),
    rateLimit: Object.freeze({ ...base.rateLimit, ...stripUndefined(overrides.rateLimit ?? {}) }),
  };
  if (merged.port > 65535) throw new Error(`the port must be 0-65535, got ${merged.port}`);
  for (const p of merged.trustedProxies) {
    try {
      parseAddressRange(p);
    } catch (err) {
      throw new Error(`PLATFORM_EDGE_TRUSTED_PROXIES: ${(err as Error).message}`);
    }
  }
  if (merged.sqlWorkers < 1) throw new Error(`PLATFORM_EDGE_SQL_WORKERS must be at least 1, got ${merged.sqlWorkers}`);
  if (merged.sqlProjectJobs === 0) merged.sqlProjectJobs = Math.max(1, Math.min(merged.sqlWorkers - 1, availableParallelism() - 1));
  if (merged.sqlProjectJobs > merged.sqlWorkers) {
    throw new Error(`PLATFORM_EDGE_SQL_PROJECT_JOBS must be at most PLATFORM_EDGE_SQL_WORKERS (${merged.sqlWorkers}), got ${merged.sqlProjectJobs}`);
  }
  if (merged.sqlTimeoutMs < 1) throw new Error(`PLATFORM_EDGE_SQL_TIMEOUT_MS must be at least 1, got ${merged.sqlTimeoutMs}`);
  for (const [name, v] of [
    ['PLATFORM_EDGE_OUTBOUND_CONNECT_TIMEOUT_MS', merged.outboundConnectTimeoutMs],
    ['PLATFORM_EDGE_OUTBOUND_TIMEOUT_MS', merged.outboundTimeoutMs],
    ['PLATFORM_EDGE_OUTBOUND_MAX_RESPONSE_BYTES', merged.outboundMaxResponseBytes],
    ['PLATFORM_EDGE_WEBHOOK_TIMEOUT_MS', merged.webhookTimeoutMs],
    ['PLATFORM_EDGE_WEBHOOK_MAX_RESPONSE_BYTES', merged.webhookMaxResponseBytes],
    ['PLATFORM_EDGE_WEBHOOK_RETRY_BASE_MS', merged.webhookRetryBaseMs],
    ['PLATFORM_EDGE_WEBHOOK_RETRY_CAP_MS', merged.webhookRetryCapMs],
    ['PLATFORM_EDGE_WEBHOOK_MAX_ATTEMPTS', merged.webhookMaxAttempts],
    ['PLATFORM_EDGE_WEBHOOK_CONCURRENCY', merged.webhookConcurrency],
  ] as const) {
    if (v < 1) throw new Error(`${name} must be at least 1, got ${v}`);
  }
  if (merged.headersTimeoutMs < 1) throw new Error(`PLATFORM_EDGE_HEADERS_TIMEOUT_MS must be at least 1, got ${merged.headersTimeoutMs}`);
  if (merged.keepAliveTimeoutMs < 1) throw new Error(`PLATFORM_EDGE_KEEP_ALIVE_TIMEOUT_MS must be at least 1, got ${merged.keepAliveTimeoutMs}`);
  if (merged.requestTimeoutMs !== 0 && merged.requestTimeoutMs < merged.headersTimeoutMs) {
    throw new Error(`the request timeout (${merged.requestTimeoutMs} ms) must be 0 or at least the headers timeout (${merged.headersTimeoutMs} ms)`);
  }
  if (merged.wsMaxBackpressure < 1024) throw new Error(`PLATFORM_EDGE_WS_MAX_BACKPRESSURE must be at least 1024, got ${merged.wsMaxBackpressure}`);
  if (merged.jobsConcurrency < 1) throw new Error(`PLATFORM_EDGE_JOBS_CONCURRENCY must be at least 1, got ${merged.jobsConcurrency}`);
  if (merged.realtimeHeartbeatMs < 10) throw new Error(`PLATFORM_EDGE_REALTIME_HEARTBEAT_MS must be at least 10, got ${merged.realtimeHeartbeatMs}`);
  if (merged.wsMaxMessage < 125) throw new Error(`PLATFORM_EDGE_WS_MAX_MESSAGE must be at least 125, got ${merged.wsMaxMessage}`);
  // note: the pinned uWS refuses an idle timeout between 1 and 7 s (its timer ticks every 4 s).
  if (merged.wsIdleTimeoutS !== 0 && (merged.wsIdleTimeoutS < 8 || merged.wsIdleTimeoutS > 960)) {
    throw new Error(`PLATFORM_EDGE_WS_IDLE_TIMEOUT_S must be 0 or 8-960, got ${merged.wsIdleTimeoutS}`);
  }
  if (merged.functionsConcurrency < 1) throw new Error(`PLATFORM_EDGE_FUNCTIONS_CONCURRENCY must be at least 1, got ${merged.functionsConcurrency}`);
  if (merged.functionsMaxIsolates < 1) throw new Error(`PLATFORM_EDGE_FUNCTIONS_MAX_ISOLATES must be at least 1, got ${merged.functionsMaxIsolates}`);
  if (merged.changeLogKeep < 1) throw new Error(`PLATFORM_EDGE_CHANGE_LOG_KEEP must be at least 1, got ${merged.changeLogKeep}`);
  // note: 0 stands for "derived": a million rows, or the kept count when that is more.
  if (merged.changeLogCap === 0) merged.changeLogCap = Math.max(1_000_000, merged.changeLogKeep);
  if (merged.changeLogCap < merged.changeLogKeep) {
    throw new Error(`PLATFORM_EDGE_CHANGE_LOG_CAP (${merged.changeLogCap}) must be at least PLATFORM_EDGE_CHANGE_LOG_KEEP (${merged.changeLogKeep})`);
  }
  if (merged.storageMaxObject < 1) throw new Error(`PLATFORM_EDGE_STORAGE_MAX_OBJECT must be at least 1, got ${merged.storageMaxObject}`);
  for (const [name, v] of [
    ['PLATFORM_EDGE_IMAGE_MAX_PIXELS', merged.imageMaxPixels],
    ['PLATFORM_EDGE_IMAGE_TIMEOUT_MS', merged.imageTimeoutMs],
    ['PLATFORM_EDGE_IMAGE_CONCURRENCY', merged.imageConcurrency],
    ['PLATFORM_EDGE_UPLOAD_EXPIRY_S', merged.uploadExpiryS],
  ] as const) {
    if (v < 1) throw new Error(`${name} must be at least 1, got ${v}`);
  }
  if (merged.durability !== 'normal' && merged.durability !== 'full') {
    throw new Error(`durability must be normal or full, got "${String(merged.durability)}"`);
  }
  return Object.freeze({
    ...merged,
    publicUrl: merged.publicUrl === null ? null : publicUrl(merged.publicUrl, 'the public URL'),
    dataDir: resolve(merged.dataDir),
    geoHeaders: Object.freeze(geo),
    outboundLoopback: Object.freeze([...merged.outboundLoopback]),
  });
}

/**
 * Checks a public URL (`--public-url`, `PLATFORM_EDGE_PUBLIC_URL`): an absolute http(s) URL,
 * returned without surrounding white space or a trailing slash. The error names `name`.
 */
export function publicUrl(v: string, name: string): string {
  const s = v.trim();
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new Error(`${name} must be an absolute http(s) URL, got "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${name} must be an http(s) URL, got "${v}"`);
  return s.replace(/\/+$/, '');
}

/**
 * PLATFORM_EDGE_OUTBOUND_LOOPBACK: the purposes (comma-separated) allowed to reach the
 * loopback hosts, or `none`. Unset: webhooks only (the contract names `http://127.0.0.1`
 * and `http://localhost` webhook URLs; a function's `fetch` must not reach the server's ports).
 */
function outboundLoopback(v: string | undefined): OutboundPurpose[] {
  if (v === undefined || v.trim() === '') return ['webhook'];
  if (v.trim() === 'none') return [];
  const out: OutboundPurpose[] = [];
  for (const p of list(v) ?? []) {
    if (!(OUTBOUND_PURPOSES as readonly string[]).includes(p)) {
      throw new Error(`PLATFORM_EDGE_OUTBOUND_LOOPBACK must be none or a list of ${OUTBOUND_PURPOSES.join(', ')}, got "${v}"`);
    }
    out.push(p as OutboundPurpose);
  }
  return out;
}

function rateLimitFromEnv(env: NodeJS.ProcessEnv): RateLimitConfig {
  const sw = env.PLATFORM_EDGE_RATE_LIMIT;
  if (sw !== undefined && sw !== '' && sw !== 'on' && sw !== 'off') {
    throw new Error(`PLATFORM_EDGE_RATE_LIMIT must be on or off, got "${sw}"`);
  }
  const n = (suffix: string, d: number): number => {
    const v = int(env[`PLATFORM_EDGE_RATE_LIMIT_${suffix}`], `PLATFORM_EDGE_RATE_LIMIT_${suffix}`) ?? d;
    if (v < 1) throw new Error(`PLATFORM_EDGE_RATE_LIMIT_${suffix} must be at least 1`);
    return v;
  };
  const d = DEFAULT_RATE_LIMIT;
  return {
    enabled: sw !== 'off',
    windowS: n('WINDOW_S', d.windowS),
    login: n('LOGIN', d.login),
    register: n('REGISTER', d.register),
    refresh: n('REFRESH', d.refresh),
    anonymous: n('ANONYMOUS', d.anonymous),
    perEmail: n('PER_EMAIL', d.perEmail),
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
