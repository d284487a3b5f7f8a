import { EdgeError } from '../../core/errors.js';
import { unsupported, type Emitter, type Node } from './emit.js';
import { kind, only, rangeVar, str } from './lower.js';
import { tokens } from './parse.js';
import type { Statement } from './statements.js';

const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;

/**
 * CREATE / ALTER / DROP POLICY (docs/sql.md "Policies"): read from Postgres' tree into a
 * change of a table's named policies, which query.ts (policy-writes.ts) applies to the
 * table's stored list, compiles and writes in the script's transaction (POLICY_WRITE).
 */

type PolicyOp = 'select' | 'insert' | 'update' | 'delete';

/** A policy as CREATE POLICY writes it (the table model's NamedPolicy). */
export interface PolicyDef {
  name: string;
  command: 'all' | PolicyOp;
  permissive: boolean;
  roles: string[];
  using: string | null;
  check: string | null;
}

export type PolicyChange =
  | { action: 'create'; table: string; policy: PolicyDef }
  | { action: 'alter'; table: string; name: string; roles?: string[]; using?: string; check?: string; rename?: string }
  | { action: 'drop'; table: string; name: string; ifExists: boolean };

/**
 * Writes a table's policies: bound by policy-writes.ts as (table, policies JSON, compiled
 * JSON, named JSON). The RLS switch is left as it is (off for a table that had no RLS row:
 * creating a policy does not enable RLS, as in Postgres).
 */
export const POLICY_WRITE = `INSERT INTO "_svc_meta.rls" (tbl, enabled, policies, compiled, named, version, updated_at) VALUES (?, 0, ?, ?, ?, 1, ${NOW})
  ON CONFLICT (tbl) DO UPDATE SET policies = excluded.policies, compiled = excluded.compiled, named = excluded.named, version = "_svc_meta.rls".version + 1, updated_at = excluded.updated_at`;

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function relation(f: Record<string, unknown>): string {
  const rel = rangeVar(f);
  if (rel.db !== null && String(rel.db) !== 'public') throw unsupported(`policies on tables outside the public schema ("${String(rel.db)}")`);
  return String(rel.table);
}

function roles(v: unknown): string[] {
  return list(v).map((r) => {
    const [, rf] = kind(r);
    if (rf.roletype === 'ROLESPEC_PUBLIC') return 'public';
    if (rf.roletype !== 'ROLESPEC_CSTRING') throw unsupported('policies for CURRENT_USER or SESSION_USER');
    return String(rf.rolename);
  });
}

/**
 * `CREATE POLICY`: the expressions stay text, compiled against the table by the RLS compiler
 * (policy-writes.ts); their text is cut from the statement at the parentheses after USING and
 * WITH CHECK, found with Postgres' own lexer.
 */
export function lowerCreatePolicy(f: Record<string, unknown>, text: string): Node {
  only('CREATE POLICY', f, 'policy_name,table,cmd_name,permissive,roles,qual,with_check');
  const table = relation(f.table as Record<string, unknown>);
  const texts = clauseTexts(text);
  if ((f.qual !== undefined) !== (texts.using !== null) || (f.with_check !== undefined) !== (texts.check !== null)) {
    throw new EdgeError('invalid_request', 'CREATE POLICY: could not read its USING / WITH CHECK expressions');
  }
  const policy: PolicyDef = {
    name: String(f.policy_name),
    command: String(f.cmd_name ?? 'all') as PolicyDef['command'],
    permissive: f.permissive === true,
    roles: roles(f.roles).filter((r) => r !== 'public'),
    using: texts.using,
    check: texts.check,
  };
  return { type: 'pe_policy', change: { action: 'create', table, policy } satisfies PolicyChange };
}

/** `ALTER POLICY p ON t [TO roles] [USING (…)] [WITH CHECK (…)]`. */
export function lowerAlterPolicy(f: Record<string, unknown>, text: string): Node {
  only('ALTER POLICY', f, 'policy_name,table,roles,qual,with_check');
  const table = relation(f.table as Record<string, unknown>);
  const texts = clauseTexts(text);
  if ((f.qual !== undefined) !== (texts.using !== null) || (f.with_check !== undefined) !== (texts.check !== null)) {
    throw new EdgeError('invalid_request', 'ALTER POLICY: could not read its USING / WITH CHECK expressions');
  }
  const change: PolicyChange = { action: 'alter', table, name: String(f.policy_name) };
  if (list(f.roles).length) change.roles = roles(f.roles).filter((r) => r !== 'public');
  if (texts.using !== null) change.using = texts.using;
  if (texts.check !== null) change.check = texts.check;
  return { type: 'pe_policy', change };
}

/** `ALTER POLICY p ON t RENAME TO q` (a RenameStmt). */
export function lowerRenamePolicy(f: Record<string, unknown>): Node {
  only('ALTER POLICY', f, 'renameType,relationType,relation,subname,newname,behavior');
  const table = relation(f.relation as Record<string, unknown>);
  return { type: 'pe_policy', change: { action: 'alter', table, name: String(f.subname), rename: String(f.newname) } satisfies PolicyChange };
}

/** `DROP POLICY [IF EXISTS] p ON t` (a DropStmt). */
export function lowerDropPolicy(f: Record<string, unknown>): Node {
  only('DROP POLICY', f, 'objects,removeType,behavior,missing_ok');
  if (f.behavior === 'DROP_CASCADE') throw unsupported('DROP POLICY … CASCADE');
  const objects = list(f.objects);
  if (objects.length !== 1) throw unsupported('DROP POLICY of several policies');
  const parts = list(kind(objects[0])[1].items).map(str);
  if (parts.length < 2 || parts.length > 3) throw unsupported(`the name ${parts.join('.')}`);
  if (parts.length === 3 && parts[0] !== 'public') throw unsupported(`policies on tables outside the public schema ("${parts[0]}")`);
  const table = parts[parts.length - 2]!;
  return { type: 'pe_policy', change: { action: 'drop', table, name: parts[parts.length - 1]!, ifExists: f.missing_ok === true } satisfies PolicyChange };
}

const COMMAND: Record<PolicyChange['action'], Statement['command']> = { create: 'CREATE POLICY', alter: 'ALTER POLICY', drop: 'DROP POLICY' };

/** The statement of a policy change; the table must exist (42P01). */
export function policyStatement(n: Node, em: Emitter): Statement {
  const change = n.change as PolicyChange;
  const phys = em.physical(null, change.table);
  if (em.opts.schema(phys) === null) throw new EdgeError('invalid_request', `relation "${phys}" does not exist`, { details: { sqlstate: '42P01' } });
  return { command: COMMAND[change.action], steps: [{ sql: POLICY_WRITE }], columns: [], readOnly: false, policy: { ...change, table: phys } };
}

/** The text inside `USING ( … )` and `WITH CHECK ( … )` at the top level of a statement. */
function clauseTexts(text: string): { using: string | null; check: string | null } {
  const ts = tokens(text);
  const out: { using: string | null; check: string | null } = { using: null, check: null };
  const group = (i: number): string | null => {
    if (ts[i]?.text !== '(') return null;
    let depth = 0;
    for (let j = i; j < ts.length; j++) {
      if (ts[j]!.text === '(') depth++;
      else if (ts[j]!.text === ')' && --depth === 0) return text.slice(ts[i]!.end, ts[j]!.start);
    }
    return null;
  };
  let depth = 0;
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i]!.text.toLowerCase();
    if (t === '(') depth++;
    else if (t === ')') depth--;
    if (depth !== 0) continue;
    if (t === 'using' && out.using === null) out.using = group(i + 1);
    else if (t === 'with' && ts[i + 1]?.text.toLowerCase() === 'check' && out.check === null) out.check = group(i + 2);
  }
  return out;
}
