import { invalidField } from '../../edge/errors.js';
import { json, noContent, route, type EdgeResponse, type RouteDef } from '../../edge/route.js';
import type { SecretsService } from './secrets.js';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The secrets endpoints (contract "secrets"; docs/api.md "Secrets and feature flags"): every
 * one needs the service role (service key or operator session; else 403), except evaluate,
 * which any key with `data:read` may call, with or without a user.
 */
export function secretsRoutes(secrets: SecretsService): RouteDef[] {
  // note: `/secrets/flags` and `/secrets/flags/evaluate` are static paths, so they win over
  // `/secrets/:name` and `/secrets/flags/:key`; writing those names answers 400, not 405.
  const reserved = (field: string, name: string) => (): EdgeResponse => {
    throw invalidField(field, `"${name}" is reserved`);
  };
  return [
    route({
      method: 'GET',
      path: '/secrets',
      auth: 'key',
      role: 'service_role',
      handler: (_req, ctx) => json(secrets.list(ctx.project)),
    }),
    route({
      method: 'PUT',
      path: '/secrets/:name',
      auth: 'key',
      role: 'service_role',
      body: 'json',
      handler: (req, ctx) => json(secrets.put(ctx.project, req.params.name!, req.json)),
    }),
    route({
      method: 'DELETE',
      path: '/secrets/:name',
      auth: 'key',
      role: 'service_role',
      handler: (req, ctx) => {
        secrets.delete(ctx.project, req.params.name!);
        return noContent();
      },
    }),
    route({
      method: 'GET',
      path: '/secrets/flags',
      auth: 'key',
      role: 'service_role',
      handler: (_req, ctx) => json(secrets.listFlags(ctx.project)),
    }),
    route({ method: 'PUT', path: '/secrets/flags', auth: 'key', role: 'service_role', handler: reserved('name', 'flags') }),
    route({ method: 'DELETE', path: '/secrets/flags', auth: 'key', role: 'service_role', handler: reserved('name', 'flags') }),
    route({
      method: 'PUT',
      path: '/secrets/flags/:key',
      auth: 'key',
      role: 'service_role',
      body: 'json',
      jsonAny: true,
      handler: (req, ctx) => json(secrets.putFlag(ctx.project, req.params.key!, req.json)),
    }),
    route({
      method: 'DELETE',
      path: '/secrets/flags/:key',
      auth: 'key',
      role: 'service_role',
      handler: (req, ctx) => {
        secrets.deleteFlag(ctx.project, req.params.key!);
        return noContent();
      },
    }),
    route({
      method: 'GET',
      path: '/secrets/flags/evaluate',
      auth: 'bearer?',
      scope: 'data:read',
      handler: (_req, ctx) => ({ status: 200, headers: JSON_TYPE, bytes: secrets.evaluate(ctx.project, ctx.user?.id ?? null) }),
    }),
    route({ method: 'PUT', path: '/secrets/flags/evaluate', auth: 'key', role: 'service_role', handler: reserved('key', 'evaluate') }),
    route({ method: 'DELETE', path: '/secrets/flags/evaluate', auth: 'key', role: 'service_role', handler: reserved('key', 'evaluate') }),
  ];
}
