import { UsageError, noExtra, parse, print, str, type Io } from './args.js';
import { openAdmin } from './context.js';

export const OPERATOR_HELP = `Usage: platform-edge operator <create EMAIL [--password PW] | login EMAIL> [options]

  create EMAIL    create an operator (dashboard) account; with --password it can also
                  log in through POST /_admin/login
  login EMAIL     print a new operator session token (lcd_…), valid 7 days; use it as
                  Authorization: Bearer <token> with X-Service-Project: <project id>

Options:
  --data-dir DIR  data folder (default ./.platform-edge, env PLATFORM_EDGE_DATA)
  --json          print JSON`;

export async function operatorCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, { password: { type: 'string' } });
  if (values.help) {
    io.out(OPERATOR_HELP);
    return 0;
  }
  const [sub, email] = positionals;
  // note: usage is checked before the data folder is opened, so a typo creates nothing.
  if (sub !== 'create' && sub !== 'login') throw new UsageError(`unknown operator command "${sub ?? ''}"\n\n${OPERATOR_HELP}`);
  if (!email) throw new UsageError(`operator ${sub} needs an EMAIL`);
  noExtra(positionals, 2, OPERATOR_HELP);
  if (sub === 'login' && values.password !== undefined) throw new UsageError('operator login takes no --password (it needs none: it reads the data folder directly)');
  const admin = openAdmin(values, io);
  try {
    const json = values.json as boolean | undefined;
    switch (sub) {
      case 'create': {
        const op = await admin.operators.create(email, str(values.password) ?? null);
        print(io, json, op, () => `operator ${op.email} created (${op.id})`);
        return 0;
      }
      case 'login': {
        const s = admin.operators.issue(email);
        print(io, json, { operator_token: s.token, expires_at: s.expires_at }, () => s.token);
        return 0;
      }
    }
  } finally {
    admin.close();
  }
}
