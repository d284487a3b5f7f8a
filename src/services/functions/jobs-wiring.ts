import type Database from 'better-sqlite3';
import type { Config } from '../../config.js';
import type { RouteDef } from '../../edge/route.js';
import type { EventBus } from '../../events/bus.js';
import type { ProjectRegistry } from '../../project/registry.js';
import { ScheduleStore } from './jobs-store.js';
import { jobsRoutes } from './jobs-routes.js';
import { JobsService, JobWorker, systemClock, type JobRunner, type JobsOptions } from './jobs.js';
import { FunctionScheduler } from './scheduler.js';

/** Jobs, schedules and triggers of one server, wired to the bus (server.ts builds one). */
export interface JobsSystem {
  readonly jobs: JobsService;
  readonly worker: JobWorker;
  readonly scheduler: FunctionScheduler;
  readonly routes: RouteDef[];
  /** Starts the loop: missed firings fire once, triggers catch up, due jobs run. */
  start(): void;
  close(): Promise<void>;
}

export function createJobsSystem(
  config: Config,
  control: Database.Database,
  registry: ProjectRegistry,
  bus: EventBus,
  runner: JobRunner,
  hooks: Pick<JobsOptions, 'timeoutOf' | 'exists'> = {},
  log: (msg: string, err?: unknown) => void = () => {},
): JobsSystem {
  const index = new ScheduleStore(control);
  const jobs = new JobsService(
    index,
    { concurrency: config.jobsConcurrency, perProject: 4, leaseGraceMs: config.jobsLeaseGraceMs, pollMs: config.jobsPollMs, ...hooks },
    config.jobsClock ?? systemClock,
  );
  const worker = new JobWorker(jobs, registry, runner, log);
  const scheduler = new FunctionScheduler(jobs, registry, log);
  worker.beforeTick(() => scheduler.fireDue());
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
