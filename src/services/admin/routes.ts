import { json, route, type RouteDef } from '../../edge/route.js';
import type { Operators } from '../../control/operators.js';
import type { ControlStore } from '../../control/control-store.js';
import { invalidBody } from '../../edge/errors.js';

/** Dashboard endpoints: operator login (e-mail + password) and the project list. */
export function adminRoutes(operators: Operators, control: ControlStore): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/_admin/login',
      auth: 'none',
      body: 'json',
      handler: async (req) => {
        const { email, password } = req.json as { email?: unknown; password?: unknown };
        if (typeof email !== 'string' || typeof password !== 'string') throw invalidBody('email and password are required strings');
        return json(await operators.login(email, password));
      },
    }),
    route({
      method: 'GET',
      path: '/_admin/projects',
      auth: 'operator',
      handler: () => json({ projects: control.listProjects() }),
    }),
  ];
}
