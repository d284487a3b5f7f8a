import { parseArgs, type ParseArgsConfig } from 'node:util';

export type Options = NonNullable<ParseArgsConfig['options']>;

/** Output streams, injectable so commands can be run in-process. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  /** Ends the process (a stopped `serve`); absent when commands run in-process. */
  exit?(code: number): void;
}

export class UsageError extends Error {}

export const COMMON: Options = {
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** Strict flag parsing: an unknown flag or a missing value is a usage error. */
export function parse(argv: string[], options: Options) {
  try {
    return parseArgs({ args: argv, options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** A usage error when a command got more positional arguments than it takes. */
export function noExtra(positionals: string[], max: number, usage: string): void {
  if (positionals.length > max) throw new UsageError(`unexpected argument "${positionals[max]!}"\n\n${usage}`);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function portFlag(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--port must be 0-65535, got "${String(v)}"`);
  return n;
}

/** Prints a value as one JSON line, or as aligned text. */
export function print(io: Io, asJson: boolean | undefined, value: unknown, text: () => string): void {
  io.out(asJson ? JSON.stringify(value) : text());
}

export function table(rows: Record<string, unknown>[], cols: string[]): string {
  if (rows.length === 0) return '(none)';
  const cell = (v: unknown): string => (v === null || v === undefined ? '-' : Array.isArray(v) ? v.join(',') : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]): string => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => cell(r[c]))))].join('\n');
}
