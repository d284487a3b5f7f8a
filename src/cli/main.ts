import { EdgeError } from '../core/errors.js';
import { UsageError, type Io } from './args.js';
import { keyCommand } from './key.js';
import { operatorCommand } from './operator.js';
import { projectCommand } from './project.js';
import { serveCommand } from './serve.js';
import { VERSION } from '../version.js';

const HELP = `Usage: platform-edge <command> [options]

Commands:
  serve       start the server (see platform-edge serve --help)
  project     create, list and delete projects
  key         create, list and revoke API keys
  operator    create operators and log them in (dashboard sessions)

Every command takes --data-dir DIR and --help; commands that print data take --json.`;

const COMMANDS: Record<string, (argv: string[], io: Io) => Promise<number>> = {
  serve: serveCommand,
  project: projectCommand,
  key: keyCommand,
  operator: operatorCommand,
};

/** Runs the CLI; returns the exit code. Errors are printed without a stack trace. */
export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined) {
    io.err(HELP);
    return 2;
  }
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    io.out(HELP);
    return 0;
  }
  if (cmd === '--version' || cmd === '-v') {
    io.out(VERSION);
    return 0;
  }
  const run = COMMANDS[cmd];
  if (!run) {
    io.err(`platform-edge: unknown command "${cmd}"\n\n${HELP}`);
    return 2;
  }
  try {
    return await run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`platform-edge ${cmd}: ${err.message}${err.message.includes('\n') ? '' : `\n(see platform-edge ${cmd} --help)`}`);
      return 2;
    }
    if (err instanceof EdgeError) {
      io.err(`platform-edge ${cmd}: ${err.message}`);
      return 1;
    }
    io.err(`platform-edge ${cmd}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

function processIo(): Io {
  return {
    out: (line) => process.stdout.write(line + '\n'),
    err: (line) => process.stderr.write(line + '\n'),
    env: process.env,
    // note: once stdout is flushed; sockets the HTTP library keeps open (idle keep-alive) must not delay the exit.
    exit: (code) => void process.stdout.write('', () => process.exit(code)),
  };
}
