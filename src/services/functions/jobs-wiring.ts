import type Database from 'better-sqlite3';
import type { Config } from '../../config.js';
import { EdgeError, notFound } from '../../core/errors.js';
import { type RouteDef } from '../../edge/route.js';
import { PUBLISHABLE_SCOPES, SCOPES, type AuthContext, type Scope } from '../../core/auth-context.js';
import type { EventBus } from '../../events/bus.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import type { FunctionOptions, FunctionsService } from './functions.js';
import { ScheduleStore } from './jobs-store.js';
import { jobsRoutes } from './jobs-routes.js';
import { JobsService, JobWorker, systemClock, type JobCaller, type JobRunner } from './jobs.js';
import { FunctionScheduler, parseSchedules, parseTriggers } from './scheduler.js';

/** Jobs, schedules and triggers of one server, wired to the functions service and the bus (server.ts builds one). */
export interface JobsSystem {
  readonly jobs: JobsService;
  readonly worker: JobWorker;
  readonly scheduler: FunctionScheduler;
  readonly routes: RouteDef[];
  /** Starts the loop: missed firings fire once, triggers catch up, due jobs run. */
  start(): void;
  close(): Promise<void>;
}

const ALL_SCOPES = new Set(SCOPES);
const KEY_SCOPES = new Set(PUBLISHABLE_SCOPES);

/**
 * The AuthContext a job runs under, rebuilt from what was stored (no token is kept): its
 * enqueuer's user id, role and key scopes (none stored — schedules, triggers: the role's).
 */
export function jobAuth(projectId: string, c: JobCaller): AuthContext {
  const service = c.role === 'service_role';
  return {
    projectId,
    keyId: null,
    scopes: c.scopes !== null ? new Set(c.scopes.filter((x): x is Scope => (SCOPES as readonly string[]).includes(x))) : service ? ALL_SCOPES : KEY_SCOPES,
    role: c.role,
    operator: null,
    user: c.userId === null ? null : { id: c.userId, role: c.role, sessionId: '', aal: 'aal1', claims: { sub: c.userId, role: c.role } },
  };
}

export function createJobsSystem(
  config: Config,
  control: Database.Database,
  registry: ProjectRegistry,
  bus: EventBus,
  functions: FunctionsService,
  log: (msg: string, err?: unknown) => void = () => {},
): JobsSystem {
  // note: the functions service keeps each version's options per project (read again after a deploy,
  // and after a second for another process's), so enqueueing and claiming read no row per job.
  const optionsOf = (lease: ProjectLease, fn: string): FunctionOptions | null => functions.options(lease, fn);
  const index = new ScheduleStore(control);
  const jobs = new JobsService(
    index,
    {
      concurrency: config.jobsConcurrency,
      // note: the functions gate runs this many calls of a project at once; more would only queue there.
      perProject: config.functionsConcurrency,
      leaseGraceMs: config.jobsLeaseGraceMs,
      pollMs: config.jobsPollMs,
      timeoutOf: (lease, fn) => optionsOf(lease, fn)?.timeout_ms ?? null,
      admit: (lease, fn, caller) => {
        const o = optionsOf(lease, fn);
        if (o === null) throw notFound('function', fn);
        // note: a job is checked against the function's `access` when enqueued, as an invoke would be.
        if (o.access === 'user' && caller.userId === null && caller.role !== 'service_role') {
          throw new EdgeError('unauthorized', 'this function needs a signed-in user (Authorization: Bearer)');
        }
        if (o.access === 'service' && caller.role !== 'service_role') throw new EdgeError('forbidden', 'this function needs the service role');
      },
    },
    config.jobsClock ?? systemClock,
  );
  const runner: JobRunner = async (lease, job) => {
    const out = await functions.invoke(lease, job.function, job.args, jobAuth(lease.projectId, job.caller), { checkAccess: false });
    return { result: out.result, logs: out.logs };
  };
  const worker = new JobWorker(jobs, registry, runner, log);
  const scheduler = new FunctionScheduler(jobs, registry, log);
  worker.beforeTick(() => scheduler.fireDue());
  functions.addOptionCheck((_name, o) => {
    parseSchedules(o.schedules);
    parseTriggers(o.triggers);
  });
  functions.onDeployed((lease, d) => {
    scheduler.setSchedules(lease.projectId, d.name, parseSchedules(d.options.schedules));
    scheduler.setTriggers(lease, d.name, parseTriggers(d.options.triggers));
    worker.poke();
  });
  functions.onDeleted((lease, name) => {
    scheduler.functionDeleted(lease, name);
  });
  bus.on('db.change', (e) => scheduler.changed(e.projectId));
  bus.on('project.deleted', (e) => scheduler.projectDeleted(e.projectId));
  return {
    jobs,
    worker,
    scheduler,
    routes: jobsRoutes(jobs),
    start() {
      scheduler.catchUp();
      worker.start();
    },
    close: () => worker.close(),
  };
}
