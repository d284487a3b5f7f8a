import { UsageError, parse, print, table, type Io } from './args.js';
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
  const admin = openAdmin(values, io);
  try {
    switch (sub) {
      case 'create': {
        if (!arg) throw new UsageError('project create needs a NAME');
        const { project, publishable, service } = admin.projects.create(arg);
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
        if (!arg) throw new UsageError('project delete needs an ID');
        admin.projects.delete(arg);
        print(io, values.json as boolean, { deleted: arg }, () => `project ${arg} deleted`);
        return 0;
      }
      default:
        throw new UsageError(`unknown project command "${sub ?? ''}"\n\n${PROJECT_HELP}`);
    }
  } finally {
    admin.close();
  }
}
