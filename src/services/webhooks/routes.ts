import { json, noContent, route, type RouteDef } from '../../edge/route.js';
import type { WebhookService } from './webhooks.js';

type Body = Record<string, unknown>;

/**
 * The webhook endpoints (docs/api.md "Webhooks"): every one needs the service role (service
 * key or operator session with X-Service-Project); a publishable key gets 403 `forbidden`.
 */
export function webhookRoutes(webhooks: WebhookService): RouteDef[] {
  return [
    route({ method: 'GET', path: '/webhooks', auth: 'key', role: 'service_role', handler: (_r, c) => json(webhooks.list(c.project)) }),
    route({
      method: 'POST',
      path: '/webhooks',
      auth: 'key',
      role: 'service_role',
      body: 'json',
      handler: (r, c) => json(webhooks.create(c.project, r.json as Body), 201),
    }),
    route({
      method: 'POST',
      path: '/webhooks/dispatch',
      auth: 'key',
      role: 'service_role',
      body: 'json',
      handler: async (r, c) => json(await webhooks.test(c.project, r.json as Body)),
    }),
    route({ method: 'GET', path: '/webhooks/:id', auth: 'key', role: 'service_role', handler: (r, c) => json(webhooks.get(c.project, r.params.id!)) }),
    route({
      method: 'PATCH',
      path: '/webhooks/:id',
      auth: 'key',
      role: 'service_role',
      body: 'json',
      handler: (r, c) => json(webhooks.update(c.project, r.params.id!, r.json as Body)),
    }),
    route({
      method: 'DELETE',
      path: '/webhooks/:id',
      auth: 'key',
      role: 'service_role',
      handler: (r, c) => {
        webhooks.delete(c.project, r.params.id!);
        return noContent();
      },
    }),
    route({
      method: 'POST',
      path: '/webhooks/:id/rotate-secret',
      auth: 'key',
      role: 'service_role',
      handler: (r, c) => json(webhooks.rotateSecret(c.project, r.params.id!)),
    }),
    route({
      method: 'GET',
      path: '/webhooks/:id/deliveries',
      auth: 'key',
      role: 'service_role',
      handler: (r, c) => json(webhooks.deliveries(c.project, r.params.id!, r.query)),
    }),
    route({
      method: 'POST',
      path: '/webhooks/:id/deliveries/:d/retry',
      auth: 'key',
      role: 'service_role',
      handler: (r, c) => json(webhooks.retry(c.project, r.params.id!, r.params.d!), 202),
    }),
  ];
}
