import type Database from 'better-sqlite3';
import { EdgeError } from '../../core/errors.js';
import { registerFunctions } from '../functions.js';
import { registerArrayFunctions } from '../functions-arrays.js';
import { BIND_CONVERSIONS } from './emit.js';

export type Conversion = (v: unknown) => unknown;
let conversions: Map<string, Conversion> | null = null;

/**
 * A conversion of emit.ts's BIND_CONVERSIONS for bound values: the very function SQLite
 * would call (taken from registerFunctions), so the result is the same; a value it rejects
 * is a 400, as in Postgres where a parameter is typed when it is bound.
 */
export function conversion(fn: string): Conversion {
  if (!conversions) {
    const found = new Map<string, Conversion>();
    const collect = { function: (name: string, _opts: unknown, f: Conversion) => found.set(name, (v: unknown) => convertWith(f, v)) };
    registerFunctions(collect as unknown as Database.Database, { at: Number.POSITIVE_INFINITY, n: 0 });
    registerArrayFunctions(collect as unknown as Database.Database);
    conversions = found;
  }
  const f = conversions.get(fn);
  if (!f || !BIND_CONVERSIONS.has(fn)) throw new Error(`no bind conversion ${fn}`);
  return f;
}

function convertWith(f: Conversion, v: unknown): unknown {
  try {
    return f(v);
  } catch (err) {
    const m = /^pe_invalid_input: (.*)$/s.exec(err instanceof Error ? err.message : '');
    if (m) throw new EdgeError('invalid_request', m[1]!.slice(0, 300));
    throw err;
  }
}

