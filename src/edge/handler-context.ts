import type { Config } from '../config.js';
import type { EventBus } from '../events/bus.js';
import type { ProjectLease, ProjectRegistry } from '../project/registry.js';
import type { ClientIp } from './client-ip.js';
import { nextTurn } from './next-turn.js';
import type { EdgeRequest, HandlerRequest, RouteDef } from './route.js';
import type { AuthContext, UserClaims } from '../core/auth-context.js';

/** One request's state while the pipeline answers it (the handler context holds its lease). */
export interface DispatchState {
  readonly t0: number;
  readonly requestId: string;
  route: RouteDef | null;
  projectId: string | null;
  lease: ProjectLease | null;
  /** The `RateLimit-*` headers of a rate-limited route, sent with its answer (errors included). */
  limit: Record<string, string> | null;
}

/** What a handler context hands out: the config, the bus, and project leases. */
export interface CtxDeps {
  readonly config: Config;
  readonly bus: EventBus;
  readonly projects: ProjectRegistry;
}

const EMPTY_QUERY = new URLSearchParams();

/** What a handler receives; a class so V8 keeps it fast (no literal getters). */
export class HandlerReq implements HandlerRequest {
  readonly method: string;
  readonly path: string;
  readonly rawQuery: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | null;
  readonly bodyTooLarge: boolean | undefined;
  stream: AsyncIterable<Uint8Array> | null;
  #query: URLSearchParams | null = null;
  readonly #req: EdgeRequest;
  readonly #clientIp: ClientIp;

  constructor(
    req: EdgeRequest,
    readonly params: Readonly<Record<string, string>>,
    readonly json: unknown,
    clientIp: ClientIp,
  ) {
    this.#req = req;
    this.#clientIp = clientIp;
    this.method = req.method;
    this.path = req.path;
    this.rawQuery = req.rawQuery;
    this.headers = req.headers;
    this.body = req.body;
    this.bodyTooLarge = req.bodyTooLarge;
    this.stream = req.stream ?? null;
  }

  /** The client's address (behind a trusted proxy: the one it forwards; see client-ip.ts). */
  get ip(): string {
    return this.#clientIp.of(this.#req.ip, this.headers);
  }

  get signal(): AbortSignal {
    return this.#req.signal;
  }

  get query(): URLSearchParams {
    return (this.#query ??= this.rawQuery ? new URLSearchParams(this.rawQuery) : EMPTY_QUERY);
  }
}

/** The handler context; the project lease is taken on first use and released by the pipeline. */
export class Ctx {
  readonly config: Config;
  readonly bus: EventBus;
  readonly requestId: string;
  readonly user: UserClaims | null;
  readonly operator: AuthContext['operator'];
  readonly #deps: CtxDeps;
  readonly #st: DispatchState;
  readonly #req: EdgeRequest;

  constructor(
    deps: CtxDeps,
    st: DispatchState,
    readonly auth: AuthContext | null,
    req: EdgeRequest,
  ) {
    this.#deps = deps;
    this.#st = st;
    this.#req = req;
    this.config = deps.config;
    this.bus = deps.bus;
    this.requestId = st.requestId;
    this.user = auth?.user ?? null;
    this.operator = auth?.operator ?? null;
  }

  get project(): ProjectLease {
    if (!this.auth) throw new Error('route without auth has no project');
    return (this.#st.lease ??= this.#deps.projects.acquire(this.auth.projectId));
  }

  later(): Promise<void> {
    return nextTurn(this.#req);
  }
}

/** The body stream of a streamed route whose request carried none. */
export async function* emptyStream(): AsyncGenerator<Uint8Array> {}
