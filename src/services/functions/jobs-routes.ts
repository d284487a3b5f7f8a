import { intParam } from '../../core/query-params.js';
import { invalidField } from '../../core/errors.js';
import { json, noContent, route, type RouteDef } from '../../edge/route.js';
import { type AuthContext } from '../../core/auth-context.js';
import { MAX_LIST, parseEnqueue, type JobCaller, type JobsService } from './jobs.js';

const DEFAULT_LIST = 100;

/** As whom a request enqueues or reads jobs: the user's id (never the token), the role and the key's scopes. */
const callerOf = (auth: AuthContext): JobCaller => ({ userId: auth.user?.id ?? null, role: auth.role, scopes: [...auth.scopes] });

/** Durable jobs of functions (docs/api.md "Jobs, schedules and triggers"). */
export function jobsRoutes(jobs: JobsService): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/functions/jobs',
      auth: 'bearer?',
      scope: 'functions:invoke',
      body: 'json',
      handler: (req, ctx) => json(jobs.enqueue(ctx.project, callerOf(ctx.auth), parseEnqueue(req.json)).job, 202),
    }),
    route({
      method: 'GET',
      path: '/functions/jobs',
      auth: 'bearer?',
      scope: 'functions:invoke',
      handler: (req, ctx) => {
        const limit = intParam(req.query, 'limit', DEFAULT_LIST, 1, MAX_LIST);
        const offset = intParam(req.query, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
        return json(jobs.list(ctx.project, callerOf(ctx.auth), req.query.get('status') || null, limit, offset));
      },
    }),
    route({
      method: 'GET',
      path: '/functions/jobs/:id',
      auth: 'bearer?',
      scope: 'functions:invoke',
      handler: (req, ctx) => json(jobs.get(ctx.project, callerOf(ctx.auth), req.params.id!)),
    }),
    route({
      method: 'DELETE',
      path: '/functions/jobs/:id',
      auth: 'bearer?',
      scope: 'functions:invoke',
      handler: (req, ctx) => {
        jobs.cancel(ctx.project, callerOf(ctx.auth), req.params.id!);
        return noContent();
      },
    }),
    // note: `/functions/jobs` is this API, so no function can be named `jobs`: a deploy there answers
    // what `PUT /functions/{name}` answers for a reserved name (not 405).
    route({
      method: 'PUT',
      path: '/functions/jobs',
      auth: 'key',
      scope: 'functions:invoke',
      role: 'service_role',
      body: 'raw',
      handler: () => {
        throw invalidField('name', '"jobs" is reserved');
      },
    }),
    route({
      method: 'POST',
      path: '/functions/jobs/:id/retry',
      auth: 'bearer?',
      scope: 'functions:invoke',
      handler: (req, ctx) => json(jobs.retry(ctx.project, callerOf(ctx.auth), req.params.id!)),
    }),
  ];
}
