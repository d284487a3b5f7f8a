import { UsageError, noExtra, parse, print, table, type Io } from './args.js';
import { openAdmin } from './context.js';

export const PROJECT_HELP = `Usage: platform-edge project <create NAME | list | delete ID> [--data-dir DIR] [--json]

  create NAME   create a project; prints its id and its publishable and service keys (shown once)
  list          list projects
  delete ID     delete a project, its keys and its data folder

Options:
  --data-dir DIR  data folder (default ./.platform-edge, env PLATFORM_EDGE_DATA)
  --json          print JSON`;

export async function projectCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, {});
  if (values.help) {
    io.out(PROJECT_HELP);
    return 0;
  }
  const [sub, arg] = positionals;
  // note: usage is checked before the data folder is opened, so a typo creates nothing.
  if (sub !== 'create' && sub !== 'list' && sub !== 'delete') throw new UsageError(`unknown project command "${sub ?? ''}"\n\n${PROJECT_HELP}`);
  if (sub !== 'list' && !arg) throw new UsageError(sub === 'create' ? 'project create needs a NAME' : 'project delete needs an ID');
  noExtra(positionals, sub === 'list' ? 1 : 2, PROJECT_HELP);
  const admin = openAdmin(values, io);
  try {
    switch (sub) {
      case 'create': {
        const { project, publishable, service } = admin.projects.create(arg!);
        print(io, values.json as boolean, { project_id: project.id, name: project.name, keys: { publishable, service } }, () =>
          [`project ${project.name} created: ${project.id}`, `  publishable key: ${publishable}`, `  service key:     ${service}`, 'Keys are shown once; store them now.'].join('\n'),
        );
        return 0;
      }
      case 'list': {
        const projects = admin.projects.list();
        print(io, values.json as boolean, { projects }, () => table(projects as never, ['id', 'name', 'created_at']));
        return 0;
      }
      case 'delete': {
        admin.projects.delete(arg!);
        print(io, values.json as boolean, { deleted: arg }, () => `project ${arg} deleted`);
        return 0;
      }
    }
  } finally {
    admin.close();
  }
}
