import { EdgeError } from '../core/errors.js';
import { compileSet, namedOf } from './policy-set.js';
import { compilePolicy } from './rls.js';
import type { FunctionLookup, SqlFunction } from './pg/sql-functions.js';
import type { PolicyUsers } from './pg/triggers.js';
import type { CompiledPolicy, NamedPolicy, RlsState, TableDef, TableInfo } from './table-model.js';

/**
 * Policies that call stored LANGUAGE sql functions (docs/sql.md "Functions in policies"). A
 * compiled policy lists the functions inlined into it (`fns`); such policies are compiled
 * again from their text whenever the catalog loads, so `CREATE OR REPLACE FUNCTION` (which
 * changes the schema version) takes effect on every path without a stale copy. DROP FUNCTION
 * asks which policies use the function: refused (2BP01) unless CASCADE, which drops them.
 */

const usesFunctions = (rls: RlsState): boolean => Object.values(rls.compiled).some((c) => c?.fns?.length);

/** Recompiles, in place on a fresh catalog, the policies that call functions, against the functions as they are. */
export function recompileFunctionPolicies(tables: Map<string, TableInfo>, functions: FunctionLookup): void {
  const lookup = (n: string): TableDef | null => tables.get(n)?.def ?? null;
  for (const t of tables.values()) {
    if (!usesFunctions(t.rls)) continue;
    try {
      const set = compileSet(namedOf(t.rls), t.def, lookup, functions);
      t.rls = { ...t.rls, policies: set.policies, compiled: set.compiled };
    } catch (err) {
      // note: e.g. a function dropped by a script that made the policy too: using the policy is that error.
      const sqlstate = err instanceof EdgeError ? String((err.details as { sqlstate?: unknown } | undefined)?.sqlstate ?? '42883') : 'XX000';
      const error = { sqlstate, message: err instanceof Error ? err.message : String(err) };
      const compiled: RlsState['compiled'] = {};
      for (const [op, c] of Object.entries(t.rls.compiled) as Array<[keyof RlsState['compiled'], CompiledPolicy]>) compiled[op] = { sql: '(0)', params: [], error, ...(c.fns ? { fns: c.fns } : {}) };
      t.rls = { ...t.rls, compiled };
    }
  }
}

/** A table's named policies that call `fn` (each policy compiled on its own to know). */
export function policiesUsing(tables: ReadonlyMap<string, TableInfo>, fn: string, functions: FunctionLookup): Array<{ table: string; policy: NamedPolicy }> {
  const lookup = (n: string): TableDef | null => tables.get(n)?.def ?? null;
  const out: Array<{ table: string; policy: NamedPolicy }> = [];
  for (const [name, t] of tables) {
    if (!Object.values(t.rls.compiled).some((c) => c?.fns?.includes(fn))) continue;
    for (const p of namedOf(t.rls)) {
      for (const src of [p.using, p.check]) {
        if (src === null) continue;
        let fns: string[] = [];
        try {
          fns = compilePolicy(src, t.def, lookup, functions).fns ?? [];
        } catch {
          // note: a policy that no longer compiles is still the function's user if its text names it.
          fns = src.toLowerCase().includes(fn) ? [fn] : [];
        }
        if (fns.includes(fn)) {
          out.push({ table: name, policy: p });
          break;
        }
      }
    }
  }
  return out;
}

/**
 * What DROP FUNCTION … CASCADE writes for the policies that call `fn`: per table, its named
 * policies without them, compiled again (with `fn` gone), as POLICY_WRITE's values.
 */
export function policiesWithout(tables: ReadonlyMap<string, TableInfo>, users: ReadonlyArray<{ table: string; name: string }>, functions: FunctionLookup): unknown[][] {
  const lookup = (n: string): TableDef | null => tables.get(n)?.def ?? null;
  const out: unknown[][] = [];
  for (const table of new Set(users.map((u) => u.table))) {
    const t = tables.get(table)!;
    const gone = new Set(users.filter((u) => u.table === table).map((u) => u.name));
    const next = namedOf(t.rls).filter((p) => !gone.has(p.name));
    const set = compileSet(next, t.def, lookup, functions);
    out.push([table, JSON.stringify(set.policies), JSON.stringify(set.compiled), JSON.stringify(next)]);
  }
  return out;
}

/**
 * CREATE OR REPLACE FUNCTION: the policies that call it, compiled with the new body (an error
 * fails the statement), as POLICY_WRITE's values — so the stored form is current too.
 */
export function replacedPolicies(tables: ReadonlyMap<string, TableInfo>, fn: SqlFunction, functions: FunctionLookup): unknown[][] {
  const lookup = (n: string): TableDef | null => tables.get(n)?.def ?? null;
  const now: FunctionLookup = (n) => (n === fn.name ? fn : functions(n));
  const out: unknown[][] = [];
  for (const [name, t] of tables) {
    if (!Object.values(t.rls.compiled).some((c) => c?.fns?.includes(fn.name))) continue;
    const named = namedOf(t.rls);
    const set = compileSet(named, t.def, lookup, now);
    out.push([name, JSON.stringify(set.policies), JSON.stringify(set.compiled), JSON.stringify(named)]);
  }
  return out;
}

/** The catalog's policies as DROP / CREATE OR REPLACE FUNCTION see them (triggers.ts routineSteps). */
export function functionPolicies(tables: ReadonlyMap<string, TableInfo>): PolicyUsers {
  return {
    users: (fn, functions) => policiesUsing(tables, fn, functions).map((u) => ({ table: u.table, name: u.policy.name })),
    drop: (users, functions) => policiesWithout(tables, users, functions),
    replace: (fn, functions) => replacedPolicies(tables, fn, functions),
  };
}
