import type { EdgeServer } from './server.js';

/** The operator `serve` and `startEdge` create on a new data folder (no password). */
export const DEFAULT_OPERATOR = 'admin@localhost';

export interface Boot {
  projectId: string;
  projectName: string;
  /** The default project's keys; null for one that was revoked. */
  keys: { publishable: string | null; service: string | null };
  operatorToken: string;
}

/**
 * Creates the default project and operator on a new data folder and mints an operator
 * session (shared by `serve` in src/cli/serve.ts and `startEdge` in src/index.ts).
 */
export async function bootstrap(server: EdgeServer): Promise<Boot> {
  const { control, projects, operators } = server;
  let projectId = control.getSetting('default_project');
  if (projectId === null || !projects.exists(projectId)) {
    const existing = projects.list();
    if (existing.length === 0) {
      projectId = projects.create('default', { sealKeys: true }).project.id;
    } else projectId = existing[0]!.id;
    control.setSetting('default_project', projectId);
  }
  if (!control.findOperator(DEFAULT_OPERATOR)) await operators.create(DEFAULT_OPERATOR, null);
  const project = control.getProject(projectId)!;
  return {
    projectId,
    projectName: project.name,
    keys: control.sealedKeys(projectId),
    operatorToken: operators.issue(DEFAULT_OPERATOR).token,
  };
}
