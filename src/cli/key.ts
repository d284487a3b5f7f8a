import { SCOPES } from '../edge/route.js';
import { UsageError, parse, print, str, table, type Io } from './args.js';
import { openAdmin } from './context.js';

export const KEY_HELP = `Usage: platform-edge key <create | list | revoke KEY_ID> [options]

  create --project ID --scopes a,b [--service] [--name NAME]
                  create an API key; prints it once
  list --project ID
                  list a project's keys (never their secrets)
  revoke KEY_ID   revoke a key; a running server refuses it within 1 s

Scopes: ${SCOPES.join(', ')}
--service makes a service-role key with every scope (bypasses row-level security).

Options:
  --data-dir DIR  data folder (default ./.platform-edge, env PLATFORM_EDGE_DATA)
  --json          print JSON`;

const KEY_COLS = ['id', 'name', 'kind', 'hint', 'role', 'scopes', 'created_at', 'last_used_at', 'revoked_at'];

export async function keyCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, {
    project: { type: 'string' },
    scopes: { type: 'string' },
    service: { type: 'boolean' },
    name: { type: 'string' },
  });
  if (values.help) {
    io.out(KEY_HELP);
    return 0;
  }
  const [sub, arg] = positionals;
  const admin = openAdmin(values, io);
  try {
    const json = values.json as boolean | undefined;
    switch (sub) {
      case 'create': {
        const project = str(values.project);
        if (!project) throw new UsageError('key create needs --project ID');
        const scopes = (str(values.scopes) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
        if (scopes.length === 0 && !values.service) throw new UsageError('key create needs --scopes a,b or --service');
        const { key, secret } = admin.projects.createKey(project, str(values.name) ?? 'cli', scopes, values.service === true);
        print(io, json, { ...key, key: secret }, () => `key ${key.id} created (${key.scopes.join(', ')}):\n  ${secret}\nShown once; store it now.`);
        return 0;
      }
      case 'list': {
        const project = str(values.project);
        if (!project) throw new UsageError('key list needs --project ID');
        const keys = admin.projects.listKeys(project);
        print(io, json, { keys }, () => table(keys as never, KEY_COLS));
        return 0;
      }
      case 'revoke': {
        if (!arg) throw new UsageError('key revoke needs a KEY_ID');
        const key = admin.projects.revokeKey(arg);
        print(io, json, key, () => `key ${key.id} revoked`);
        return 0;
      }
      default:
        throw new UsageError(`unknown key command "${sub ?? ''}"\n\n${KEY_HELP}`);
    }
  } finally {
    admin.close();
  }
}
