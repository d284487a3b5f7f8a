import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config.js';
import { createServer, type EdgeServer } from '../server.js';
import { UsageError, parse, portFlag, str, type Io } from './args.js';

export const SERVE_HELP = `Usage: platform-edge serve [options]

Serves every service of every project in the data folder. On a folder with no project it
creates project "default" with a publishable and a service key, and prints them.

Options:
  --port N             port (default 8787; 0 picks a free one)
  --host H             address to bind (default 127.0.0.1)
  --data-dir DIR       data folder (default ./.platform-edge, env PLATFORM_EDGE_DATA)
  --public-url URL     the address clients use, when behind a proxy
  --durability MODE    normal (default) or full: fsync every commit
  --ephemeral          use a fresh temporary data folder, deleted on exit (for CI)
  --json               print one JSON line {url, project_id, keys, operator_token} once listening
  -h, --help           this help

Environment: PLATFORM_EDGE_HTTP=uws|node forces an HTTP backend; PLATFORM_EDGE_MASTER_KEY
sets the master key (else <data-dir>/master.key is created).`;

const DEFAULT_OPERATOR = 'admin@localhost';

export async function serveCommand(argv: string[], io: Io): Promise<number> {
  const { values } = parse(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    'public-url': { type: 'string' },
    durability: { type: 'string' },
    ephemeral: { type: 'boolean' },
  });
  if (values.help) {
    io.out(SERVE_HELP);
    return 0;
  }
  const durability = str(values.durability);
  if (durability !== undefined && durability !== 'normal' && durability !== 'full') {
    throw new UsageError(`--durability must be normal or full, got "${durability}"`);
  }
  const ephemeral = values.ephemeral === true;
  const config = loadConfig(
    {
      port: portFlag(values.port),
      host: str(values.host),
      dataDir: ephemeral ? mkdtempSync(join(tmpdir(), 'platform-edge-')) : str(values['data-dir']),
      publicUrl: str(values['public-url']),
      durability: durability as 'normal' | 'full' | undefined,
      ephemeral,
    },
    io.env,
  );
  const server = createServer(config, (msg, err) => io.err(`platform-edge: ${msg}${err instanceof Error ? `: ${err.stack ?? err.message}` : ''}`));
  try {
    const boot = await bootstrap(server);
    const { url, backend } = await server.listen();
    const shown = { url: config.publicUrl ?? url, project_id: boot.projectId, keys: boot.keys, operator_token: boot.operatorToken };
    if (values.json) {
      io.err(`platform-edge: http backend ${backend}`);
      io.out(JSON.stringify(shown));
    } else {
      io.out(banner(config.version, backend, config.dataDir, ephemeral, shown, boot.projectName));
    }
  } catch (err) {
    await server.close().catch(() => {});
    throw err;
  }
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await server.close();
  return 0;
}

interface Boot {
  projectId: string;
  projectName: string;
  keys: { publishable: string | null; service: string | null };
  operatorToken: string;
}

/** Creates the default project and operator on a new data folder; mints an operator session. */
async function bootstrap(server: EdgeServer): Promise<Boot> {
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

function banner(version: string, backend: string, dataDir: string, ephemeral: boolean, s: { url: string; project_id: string; keys: Boot['keys']; operator_token: string }, name: string): string {
  return [
    `platform-edge ${version} serving on ${s.url} (http backend: ${backend})`,
    `data folder: ${dataDir}${ephemeral ? ' (ephemeral, deleted on exit)' : ''}`,
    '',
    `project ${name}: ${s.project_id}`,
    `  publishable key: ${s.keys.publishable ?? '(not available: create one with `platform-edge key create`)'}`,
    `  service key:     ${s.keys.service ?? '(not available)'}`,
    `operator token:    ${s.operator_token}`,
    '',
    `Try: curl ${s.url}/health`,
  ].join('\n');
}
