import { loadParser } from './sql/pg/parse.js';
import { join } from 'node:path';
import { mkdirSync, rmSync } from 'node:fs';
import type { Config } from './config.js';
import { ControlStore } from './control/control-store.js';
import { CredentialCache } from './control/keys.js';
import { Operators } from './control/operators.js';
import { loadMasterKey } from './control/master-key.js';
import { Sealer } from './control/seal.js';
import { Pipeline } from './edge/pipeline.js';
import type { RequestRecord } from './edge/request-record.js';
import type { EdgeRequest, EdgeResponse, RouteDef } from './edge/route.js';
import { EventBus } from './events/bus.js';
import { startHttp, type HttpServer } from './http/index.js';
import { ProjectRegistry, type ProjectLease } from './project/registry.js';
import { pruneChangeLog } from './events/change-log.js';
import { adminRoutes } from './services/admin/routes.js';
import { AuthService } from './services/auth/auth.js';
import { authRoutes } from './services/auth/routes.js';
import { DbService } from './services/db/db.js';
import { dbRoutes } from './services/db/routes.js';
import { QueryService } from './services/db/query.js';
import { ViewRows } from './services/db/view-rows.js';
import type { GraphQLService } from './services/db/graphql.js';
import { RpcService } from './services/db/rpc.js';
import { sqlRoutes } from './services/db/sql-routes.js';
import { SqlPool } from './sql/worker/pool.js';
import { healthRoutes } from './services/health/routes.js';
import { TopicHub } from './edge/ws-topics.js';
import { LiveLog } from './services/live/live.js';
import { liveRoutes } from './services/live/routes.js';
import { PublicTraffic } from './services/live/traffic.js';
import { RealtimeService } from './services/realtime/realtime.js';
import { realtimeRoutes } from './services/realtime/routes.js';
import { ProjectAdmin } from './control/project-admin.js';
import { OutboundClient } from './net/outbound.js';
import { FunctionsService } from './services/functions/functions.js';
import { functionsRoutes } from './services/functions/routes.js';
import { SecretsService } from './services/secrets/secrets.js';
import { secretsRoutes } from './services/secrets/routes.js';
import { createJobsSystem } from './services/functions/jobs-wiring.js';
import { WebhookService } from './services/webhooks/webhooks.js';
import type { TableLookup } from './services/webhooks/wire.js';
import { webhookRoutes } from './services/webhooks/routes.js';
import { LocalObjectStore } from './services/storage/object-store.js';
import { storageRoutes } from './services/storage/routes.js';
import { imageCacheHook, imageReadHook, withVariantCleanup } from './services/storage/image-read.js';
import { ImageTransformer } from './services/storage/image-transform.js';
import { mediaRoutes } from './services/storage/media-routes.js';
import { StorageHousekeeper } from './services/storage/housekeeping.js';
import { UploadService } from './services/storage/uploads.js';
import { StorageService } from './services/storage/storage.js';
import { UrlSigner } from './services/storage/signing.js';
import { ShortIdIndex } from './services/storage/store.js';

export interface EdgeServer {
  readonly config: Config;
  readonly control: ControlStore;
  readonly projects: ProjectAdmin;
  readonly operators: Operators;
  /** The in-process event bus (listeners run after the emitting request, src/events/bus.ts). */
  readonly bus: EventBus;
  dispatch(req: EdgeRequest): Promise<EdgeResponse>;
  listen(): Promise<{ url: string; port: number; backend: 'uws' | 'node' }>;
  /** Stops accepting, finishes in-flight requests, closes every database. */
  close(): Promise<void>;
}

export type Logger = (msg: string, err?: unknown) => void;

/** Wires control plane, projects, bus, services and the edge pipeline. */
export function createServer(config: Config, log: Logger = () => {}): EdgeServer {
  const startedAt = Date.now();
  mkdirSync(config.dataDir, { recursive: true });
  const sealer = new Sealer(loadMasterKey(config.dataDir, config.masterKey));
  const control = new ControlStore(config.dataDir, config.durability, sealer);
  const registry = new ProjectRegistry(config);
  const credentials = new CredentialCache(control, config.controlPollMs);
  const bus = new EventBus((err) => log('event listener failed', err));
  const projects = new ProjectAdmin(config, control, registry, credentials, bus);
  const operators = new Operators(control, () => credentials.invalidate());
  let http: HttpServer | null = null;

  const live = new LiveLog(config, registry, () => ({
    version: config.version,
    backend: http?.backend ?? 'none',
    uptime_s: Math.floor((Date.now() - startedAt) / 1000),
    open_projects: registry.openCount,
    rss_mb: Math.round(process.memoryUsage.rss() / 1048576),
  }));
  const traffic = new PublicTraffic();
  bus.on('db.change', (e) => live.recordChange(e.projectId, changeLabel(e.op, e.table)));
  bus.on('project.deleted', (e) => live.forget(e.projectId));
  // note: built before the services that read its settings and secrets (`secrets.get(lease, name)`).
  const secrets = new SecretsService(sealer, bus);
  const auth = new AuthService(config, registry, bus, sealer);
  bus.on('project.deleted', (e) => auth.tokens.forget(e.projectId));
  credentials.onExternalChange(() => projects.reconcile());

  // note: caller-supplied SQL runs off the main thread (docs/sql.md "How it works").
  const sqlPool = new SqlPool({
    size: config.sqlWorkers,
    perProject: config.sqlProjectJobs,
    queuePerProject: config.sqlProjectQueue,
    synchronous: config.durability === 'full' ? 'FULL' : 'NORMAL',
    maxDbBytes: config.maxProjectDbBytes,
  });
  const query = new QueryService(sqlPool, config.dataDir, bus, config.sqlTimeoutMs);
  const db = new DbService(bus);
  db.views = new ViewRows(query);
  auth.setRowCascade((p, table, id) => db.cascade(p, table, id));
  const topics = new TopicHub();
  const outbound = new OutboundClient(config);
  const functions = new FunctionsService(config, bus, { db, query, outbound, secrets }, log);
  const jobsSystem = createJobsSystem(config, control.db, registry, bus, functions, log);
  const webhooks = new WebhookService(config, registry, bus, sealer, outbound, webhookTables(db), { log });
  const images = new ImageTransformer((id) => join(config.dataDir, 'projects', id, 'variants'), {
    maxPixels: config.imageMaxPixels, timeoutMs: config.imageTimeoutMs, concurrency: config.imageConcurrency, queue: config.imageQueue, cacheBytes: config.imageCacheBytes,
  });
  const signer = new UrlSigner((project) => sealer.macKey(project, 'storage'));
  const objectFiles = new LocalObjectStore(config.dataDir);
  const storage = new StorageService(config, registry, withVariantCleanup(objectFiles, images), new ShortIdIndex(control.db), signer);
  bus.on('project.deleted', (e) => storage.forgetProject(e.projectId));
  const realtime = new RealtimeService(config, registry, db, bus, topics, () => auth.verifyBearer);
  storage.transformer = imageReadHook(images, storage);
  storage.transformerCached = imageCacheHook(images, storage);
  const uploads = new UploadService(config.dataDir, storage, { expiryS: config.uploadExpiryS });
  // note: stale temp files and expired uploads go as a project opens and on the maintenance timer below.
  const housekeeper = new StorageHousekeeper(registry, objectFiles, uploads, { everyMs: config.changeLogPruneMs, log });
  bus.on('project.deleted', (e) => housekeeper.forget(e.projectId));
  // One line per service: each service's routes (docs/architecture.md "Adding a service").
  const routes: RouteDef[] = [
    ...healthRoutes(config.version, startedAt),
    ...liveRoutes(live, traffic, topics),
    ...adminRoutes(operators, control),
    ...authRoutes(auth, config.rateLimit),
    ...dbRoutes(db),
    ...sqlRoutes(query, new RpcService(db, query), lazyGraphql(db)),
    ...functionsRoutes(functions),
    ...secretsRoutes(secrets),
    ...jobsSystem.routes,
    ...webhookRoutes(webhooks),
    ...storageRoutes(storage, config),
    ...realtimeRoutes(realtime, config),
    ...mediaRoutes(uploads, config, (secret) => credentials.key(secret)),
  ];
  const pipeline = new Pipeline({
    config,
    routes,
    credentials,
    projects: registry,
    bus,
    topics,
    projectExists: (id) => projects.exists(id),
    onRecord: (r: RequestRecord) => {
      webhooks.noteRequest();
      if (r.projectId !== null) live.recordRequest(r.projectId, r.method, r.route, r.status, r.durationMs);
      traffic.record(r.geo);
    },
    logError: log,
  });
  pipeline.setBearerVerifier(auth.verifyBearer);

  // note: change-log retention (docs/api.md "Change log"): open projects on a timer; every project also
  // as it opens and as it closes, so a project that is not open never holds more than the rules allow.
  const retention = { keep: config.changeLogKeep, cap: config.changeLogCap };
  const prune = (lease: ProjectLease): void => {
    try {
      pruneChangeLog(lease, retention);
    } catch (err) {
      log(`change log of project ${lease.projectId} not pruned`, err);
    }
    try {
      webhooks.pruneLog(lease);
    } catch (err) {
      log(`webhook delivery log of project ${lease.projectId} not pruned`, err);
    }
  };
  registry.onMaintain((lease, when) => {
    prune(lease);
    if (when === 'open') void housekeeper.schedule(lease.projectId);
  });
  const pruneTimer = setInterval(() => {
    for (const id of registry.openIds()) {
      void housekeeper.schedule(id);
      let lease: ProjectLease;
      try {
        lease = registry.acquire(id);
      } catch (err) {
        log(`change log of project ${id} not pruned`, err);
        continue;
      }
      try {
        prune(lease);
      } finally {
        lease.release();
      }
    }
  }, config.changeLogPruneMs);
  pruneTimer.unref();

  const parserLoading = loadParser();
  return {
    config,
    control,
    projects,
    operators,
    bus,
    dispatch: (req) => Promise.resolve(pipeline.dispatch(req)),
    async listen() {
      // note: PostgreSQL's parser (WebAssembly) loads while the rest starts; requests wait for nothing after this.
      await parserLoading;
      http = await startHttp(config.http, pipeline, config.host, config.port, config);
      jobsSystem.start();
      webhooks.start(control.listProjects().map((p) => p.id));
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      return { url: `http://${host}:${http.port}`, port: http.port, backend: http.backend };
    },
    async close() {
      clearInterval(pruneTimer);
      housekeeper.close();
      webhooks.close();
      await http?.shutdown(5000);
      await jobsSystem.close();
      outbound.close();
      realtime.stop();
      live.close();
      functions.close();
      await sqlPool.close();
      credentials.close();
      registry.closeAll();
      control.close();
      bus.close();
      if (config.ephemeral) rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/** The tables a webhook may name: the rows API's (their model, for the filter's compiler). */
function webhookTables(db: DbService): TableLookup {
  return (lease, name) => {
    try {
      return db.table(lease, name);
    } catch {
      return null;
    }
  };
}

/**
 * The GraphQL service, loaded on the first GraphQL request: the `graphql` package costs
 * about 150 ms and 13 MB, which `serve` should not pay before it is ready.
 */
function lazyGraphql(db: DbService): Pick<GraphQLService, 'run'> {
  let service: Promise<GraphQLService> | null = null;
  return {
    run: async (...args) => {
      service ??= import('./services/db/graphql.js').then((m) => new m.GraphQLService(db));
      return (await service).run(...args);
    },
  };
}

const changeLabel = (op: 'insert' | 'update' | 'delete', table: string): string =>
  op === 'insert' ? `insert into ${table}` : op === 'update' ? `update ${table}` : `delete from ${table}`;
