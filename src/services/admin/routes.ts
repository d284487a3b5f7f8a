import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { json, route, type RouteDef } from '../../edge/route.js';
import type { Operators } from '../../control/operators.js';
import type { ControlStore } from '../../control/control-store.js';
import { invalidBody } from '../../core/errors.js';

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
    route({
      method: 'GET',
      path: '/_admin/backup',
      auth: 'key',
      role: 'service_role',
      // note: a consistent copy of the project's database (SQLite's online backup: writers go on
      // meanwhile), written to a temporary file in the data folder and sent from it, with its
      // length, byte ranges and HEAD; the file is deleted once sent (docs/api.md "Backup").
      handler: async (_req, c) => {
        const dir = join(c.config.dataDir, 'tmp');
        mkdirSync(dir, { recursive: true });
        const path = join(dir, `backup-${randomUUID()}.db`);
        try {
          await c.project.db.backup(path);
        } catch (err) {
          rmSync(path, { force: true });
          throw err;
        }
        const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 15);
        return {
          status: 200,
          headers: { 'content-disposition': `attachment; filename="${c.auth.projectId}-${stamp}Z.db"`, 'cache-control': 'no-store' },
          file: { path, contentType: 'application/vnd.sqlite3', remove: true },
        };
      },
    }),
  ];
}
