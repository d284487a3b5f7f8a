import type { RateLimitConfig } from '../../config.js';
import { json, noContent, route, type RateLimitRule, type RouteDef } from '../../edge/route.js';
import { getUser, listUsers, updateUser } from './admin.js';
import type { AuthService } from './auth.js';
import { putUserFields } from './fields.js';
import { listRoles, putRoles } from './roles.js';
import { userFields } from './store.js';
import type { Body } from './validate.js';

/** The sign-in endpoints' rate limits: per client address, and per e-mail for login and register (docs/api.md "Rate limits"). */
function limits(rl: RateLimitConfig): Record<'register' | 'login' | 'anonymous' | 'refresh', RateLimitRule> {
  const perEmail = { field: 'email', limit: rl.perEmail };
  return {
    register: { name: 'register', perAddress: rl.register, perField: perEmail, windowS: rl.windowS },
    login: { name: 'login', perAddress: rl.login, perField: perEmail, windowS: rl.windowS },
    anonymous: { name: 'anonymous', perAddress: rl.anonymous, windowS: rl.windowS },
    refresh: { name: 'refresh', perAddress: rl.refresh, windowS: rl.windowS },
  };
}

/** The auth endpoints (contract "auth"; docs/api.md "Auth"). */
export function authRoutes(auth: AuthService, rateLimit: RateLimitConfig): RouteDef[] {
  const limit = limits(rateLimit);
  return [
    route({
      method: 'POST',
      path: '/auth/register',
      auth: 'key',
      body: 'json',
      rateLimit: limit.register,
      handler: async (req, ctx) => json(await auth.register(ctx.project, req.json as Body)),
    }),
    route({
      method: 'POST',
      path: '/auth/login',
      auth: 'key',
      body: 'json',
      rateLimit: limit.login,
      handler: async (req, ctx) => json(await auth.login(ctx.project, req.json as Body)),
    }),
    route({
      method: 'POST',
      path: '/auth/anonymous',
      auth: 'key',
      rateLimit: limit.anonymous,
      handler: async (_req, ctx) => json(await auth.anonymous(ctx.project)),
    }),
    route({
      method: 'POST',
      path: '/auth/refresh',
      auth: 'key',
      body: 'json',
      rateLimit: limit.refresh,
      handler: async (req, ctx) => json(await auth.refresh(ctx.project, req.json as Body)),
    }),
    route({
      method: 'POST',
      path: '/auth/logout',
      auth: 'bearer',
      handler: (_req, ctx) => {
        auth.logout(ctx.project, ctx.user);
        return noContent();
      },
    }),
    route({
      method: 'GET',
      path: '/auth/me',
      auth: 'bearer',
      handler: (_req, ctx) => json(auth.me(ctx.project, ctx.user.id)),
    }),
    route({
      method: 'PATCH',
      path: '/auth/me',
      auth: 'bearer',
      body: 'json',
      handler: async (req, ctx) => json(await auth.updateMe(ctx.project, ctx.user.id, req.json as Body)),
    }),
    ...adminRoutes(auth),
  ];
}

/** Administration: an operator session or a key with `auth:admin` (the service key). */
function adminRoutes(auth: AuthService): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/auth/users',
      auth: 'key',
      scope: 'auth:admin',
      handler: (req, ctx) => json(listUsers(ctx.project, req.query)),
    }),
    route({
      method: 'GET',
      path: '/auth/users/:id',
      auth: 'key',
      scope: 'auth:admin',
      handler: (req, ctx) => json(getUser(ctx.project, req.params.id!)),
    }),
    route({
      method: 'PATCH',
      path: '/auth/users/:id',
      auth: 'key',
      scope: 'auth:admin',
      body: 'json',
      handler: (req, ctx) => {
        const user = updateUser(ctx.project, req.params.id!, req.json as Body);
        auth.forgetUser(ctx.auth.projectId, user.id);
        return json(user);
      },
    }),
    route({
      method: 'DELETE',
      path: '/auth/users/:id',
      auth: 'key',
      scope: 'auth:admin',
      handler: (req, ctx) => {
        auth.deleteUser(ctx.project, req.params.id!);
        return noContent();
      },
    }),
    // note: readable with any key, so a client can build its sign-up form from it.
    route({
      method: 'GET',
      path: '/auth/user-fields',
      auth: 'key',
      handler: (_req, ctx) => json({ fields: userFields(ctx.project) }),
    }),
    route({
      method: 'PUT',
      path: '/auth/user-fields',
      auth: 'key',
      scope: 'auth:admin',
      body: 'json',
      handler: (req, ctx) => json({ fields: putUserFields(ctx.project, req.json as Body) }),
    }),
    route({
      method: 'GET',
      path: '/auth/roles',
      auth: 'key',
      scope: 'auth:admin',
      handler: (_req, ctx) => json({ roles: listRoles(ctx.project) }),
    }),
    route({
      method: 'PUT',
      path: '/auth/roles',
      auth: 'key',
      scope: 'auth:admin',
      body: 'json',
      jsonAny: true,
      handler: (req, ctx) => json({ roles: putRoles(ctx.project, req.json) }),
    }),
  ];
}
