import { unsupported } from './emit.js';

/** Checks a `CREATE FUNCTION … LANGUAGE sql` statement (inlining where called: not yet). */
export function checkSqlFunction(_f: Record<string, unknown>, _text: string): void {
  throw unsupported('LANGUAGE sql functions (not yet: only PL/pgSQL trigger functions are supported)');
}
