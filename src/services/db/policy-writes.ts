import { EdgeError } from '../../core/errors.js';
import type { Statement } from '../../sql/pg/statements.js';
import type { Translation } from '../../sql/pg/translate.js';
import { scriptFunctions, type FunctionLookup } from '../../sql/pg/sql-functions.js';
import { checkPolicy, compileSet, namedOf } from '../../sql/policy-set.js';
import type { NamedPolicy, TableDef, TableInfo } from '../../sql/table-model.js';

/**
 * The values of each CREATE / ALTER / DROP POLICY step of a script (docs/sql.md "Policies"):
 * the table's named policies (from the catalog, or as earlier statements of the script left
 * them, which may also have created the table) with the change applied, all compiled now and
 * combined per operation — a policy that does not translate is a 400 and nothing of the script
 * runs — and written by the step in the script's transaction (policy-stmt.ts POLICY_WRITE).
 * DROP POLICY IF EXISTS of a policy that is not there writes the list unchanged.
 */
export function policyWrites(tables: ReadonlyMap<string, TableInfo>, t: Translation, stored?: FunctionLookup): Map<Statement, unknown[]> {
  const out = new Map<Statement, unknown[]>();
  if (!t.statements.some((s) => s.policy)) return out;
  const state = new Map<string, { def: TableDef; named: NamedPolicy[] }>();
  const lookup = (name: string): TableDef | null => state.get(name)?.def ?? tables.get(name)?.def ?? null;
  // note: a policy may call a function the script created (or replaced) before it.
  const fns = scriptFunctions(stored);
  for (const s of t.statements) {
    fns.note(s.routine);
    if (s.catalogDef && s.effect) {
      const def = { name: s.effect.table, kind: 'relational', created_at: null, ...s.catalogDef } as TableDef;
      state.set(s.effect.table, { def, named: [] });
    }
    const change = s.policy;
    if (!change) continue;
    const table = change.table;
    let cur = state.get(table);
    if (!cur) {
      const info = tables.get(table);
      if (!info) throw new EdgeError('invalid_request', `policies apply to tables GET /db/tables lists; "${table}" is not one of them (docs/sql.md "Tables made by raw DDL")`);
      cur = { def: info.def, named: namedOf(info.rls).map((p) => ({ ...p })) };
      state.set(table, cur);
    }
    const at = change.action === 'create' ? -1 : cur.named.findIndex((p) => p.name === change.name);
    const missing = (): EdgeError => new EdgeError('invalid_request', `policy "${change.action === 'create' ? '' : change.name}" for table "${table}" does not exist`, { details: { sqlstate: '42704' } });
    let next: NamedPolicy[];
    if (change.action === 'create') {
      if (cur.named.some((p) => p.name === change.policy.name)) {
        throw new EdgeError('invalid_request', `policy "${change.policy.name}" for table "${table}" already exists`, { details: { sqlstate: '42710' } });
      }
      checkPolicy(change.policy);
      next = [...cur.named, { ...change.policy }];
    } else if (change.action === 'drop') {
      if (at < 0 && !change.ifExists) throw missing();
      next = cur.named.filter((_, i) => i !== at);
    } else {
      if (at < 0) throw missing();
      const p = { ...cur.named[at]! };
      if (change.rename !== undefined) {
        if (cur.named.some((q) => q.name === change.rename)) throw new EdgeError('invalid_request', `policy "${change.rename}" for table "${table}" already exists`, { details: { sqlstate: '42710' } });
        p.name = change.rename;
      }
      if (change.roles !== undefined) p.roles = change.roles;
      if (change.using !== undefined) p.using = change.using;
      if (change.check !== undefined) p.check = change.check;
      checkPolicy(p);
      next = cur.named.map((q, i) => (i === at ? p : q));
    }
    const set = compileSet(next, cur.def, lookup, fns.lookup);
    cur.named = next;
    out.set(s, [table, JSON.stringify(set.policies), JSON.stringify(set.compiled), JSON.stringify(next)]);
  }
  return out;
}
