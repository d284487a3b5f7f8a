import { SCOPES } from '../core/auth-context.js';
import { UsageError, noExtra, parse, print, str, table, type Io } from './args.js';
import type { KeyRecord } from '../control/control-store.js';
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
  // note: usage is checked before the data folder is opened, so a typo creates nothing.
  if (sub !== 'create' && sub !== 'list' && sub !== 'revoke') throw new UsageError(`unknown key command "${sub ?? ''}"\n\n${KEY_HELP}`);
  noExtra(positionals, sub === 'revoke' ? 2 : 1, KEY_HELP);
  const project = str(values.project);
  if (sub !== 'revoke' && !project) throw new UsageError(`key ${sub} needs --project ID`);
  if (sub === 'revoke' && !arg) throw new UsageError('key revoke needs a KEY_ID');
  const scopes = (str(values.scopes) ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (sub === 'create') {
    if (scopes.length === 0 && !values.service) throw new UsageError('key create needs --scopes a,b or --service');
    const bad = scopes.find((s) => !(SCOPES as readonly string[]).includes(s));
    if (bad !== undefined) throw new UsageError(`unknown scope "${bad}"; known scopes: ${SCOPES.join(', ')}`);
  }
  const admin = openAdmin(values, io);
  try {
    const json = values.json as boolean | undefined;
    switch (sub) {
      case 'create': {
        const { key, secret } = admin.projects.createKey(project!, str(values.name) ?? 'cli', scopes, values.service === true);
        print(io, json, { ...shown(key), key: secret }, () => `key ${key.id} created (${key.role}; ${key.scopes.join(', ')}):\n  ${secret}\nShown once; store it now.`);
        return 0;
      }
      case 'list': {
        const keys = admin.projects.listKeys(project!).map(shown);
        print(io, json, { keys }, () => table(keys as never, KEY_COLS));
        return 0;
      }
      case 'revoke': {
        const key = shown(admin.projects.revokeKey(arg!));
        print(io, json, key, () => `key ${key.id} revoked`);
        return 0;
      }
    }
  } finally {
    admin.close();
  }
}

/** A key as printed: only these fields, so never its secret nor the sealed (encrypted) copy of it. */
function shown(k: KeyRecord): KeyRecord {
  return {
    id: k.id,
    project_id: k.project_id,
    name: k.name,
    kind: k.kind,
    hint: k.hint,
    scopes: k.scopes,
    role: k.role,
    created_at: k.created_at,
    last_used_at: k.last_used_at,
    revoked_at: k.revoked_at,
  };
}
