import { resolve } from 'node:path';
import { VERSION } from './version.js';

/** Which HTTP backend serves requests; `auto` picks native uWS when its binary loaded. */
export type HttpBackend = 'auto' | 'uws' | 'node';

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
}

export type ConfigOverrides = { -readonly [K in keyof Config]?: Config[K] };

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
  const httpEnv = env.PLATFORM_EDGE_HTTP;
  if (httpEnv !== undefined && httpEnv !== '' && !['auto', 'uws', 'node'].includes(httpEnv)) {
    throw new Error(`PLATFORM_EDGE_HTTP must be auto, uws or node, got "${httpEnv}"`);
  }
  const base: Config = {
    host: env.PLATFORM_EDGE_HOST ?? '127.0.0.1',
    port: int(env.PLATFORM_EDGE_PORT, 'PLATFORM_EDGE_PORT') ?? 8787,
    dataDir: env.PLATFORM_EDGE_DATA ?? './.platform-edge',
    publicUrl: env.PLATFORM_EDGE_PUBLIC_URL ?? null,
    durability: env.PLATFORM_EDGE_DURABILITY === 'full' ? 'full' : 'normal',
    ephemeral: false,
    http: (httpEnv || 'auto') as HttpBackend,
    maxJsonBody: int(env.PLATFORM_EDGE_MAX_JSON_BODY, 'PLATFORM_EDGE_MAX_JSON_BODY') ?? 1024 * 1024,
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
  };
  const merged = { ...base, ...stripUndefined(overrides) };
  if (merged.durability !== 'normal' && merged.durability !== 'full') {
    throw new Error(`--durability must be normal or full, got "${String(merged.durability)}"`);
  }
  return Object.freeze({ ...merged, dataDir: resolve(merged.dataDir), geoHeaders: Object.freeze(geo) });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
