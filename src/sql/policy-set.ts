import { EdgeError } from '../core/errors.js';
import { compilePolicy, type TableLookup } from './rls.js';
import type { FunctionLookup } from './pg/sql-functions.js';
import { POLICY_OPS, type CompiledPolicy, type NamedPolicy, type PolicyOp, type RlsState, type TableDef } from './table-model.js';

/**
 * A table's named policies (CREATE POLICY, or the `named` list of `PUT …/rls`) → the rows
 * API's per-operation expressions, combined as Postgres combines them: for each command the
 * permissive policies that apply are ORed, and the restrictive ones ANDed with that (no
 * permissive policy: denied). USING applies to the rows a command reads (select, update,
 * delete); WITH CHECK (else USING) to new rows (insert, and an update's new row).
 * `TO anon|authenticated|service_role` guards a policy with `auth.role() IN (…) AND …` (a
 * restrictive one with `auth.role() NOT IN (…) OR …`: it does not restrict other roles).
 */

export const POLICY_ROLES: readonly string[] = ['anon', 'authenticated', 'service_role'];
const COMMANDS: readonly string[] = ['all', ...POLICY_OPS];
const MAX_POLICIES = 100;

/** The per-op names a `PUT …/rls` `policies` object (and a row written before names) is kept under. */
export const legacyName = (op: PolicyOp): string => `rls_${op}`;

/** A stored row's named policies: its list, or (written before names were kept) one per op of `policies`. */
export function namedOf(state: Pick<RlsState, 'named' | 'policies'>): NamedPolicy[] {
  if (state.named) return state.named;
  const out: NamedPolicy[] = [];
  for (const op of POLICY_OPS) {
    const src = state.policies[op];
    if (src === undefined) continue;
    out.push({ name: legacyName(op), command: op, permissive: true, roles: [], using: op === 'insert' ? null : src, check: op === 'insert' ? src : null });
  }
  return out;
}

/** Postgres' rules for a policy's parts; the messages are Postgres'. */
export function checkPolicy(p: NamedPolicy): void {
  if (p.check !== null && (p.command === 'select' || p.command === 'delete')) throw new EdgeError('invalid_request', 'WITH CHECK cannot be applied to SELECT or DELETE');
  if (p.using !== null && p.command === 'insert') throw new EdgeError('invalid_request', 'only WITH CHECK expression allowed for INSERT');
  for (const r of p.roles) {
    if (!POLICY_ROLES.includes(r)) throw new EdgeError('unsupported_sql', `policies for role "${r}" (roles here: public, anon, authenticated, service_role)`, { details: { construct: `role ${r}` } });
  }
}

/** A policy of a `PUT …/rls` `named` list, checked field by field. */
export function namedFromJson(v: unknown, i: number): NamedPolicy {
  const at = `named[${i}]`;
  const bad = (field: string, why: string): EdgeError => new EdgeError('invalid_field', `${at}.${field} ${why}`, { details: { field: `${at}.${field}` } });
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad('', 'must be an object');
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!['name', 'command', 'permissive', 'roles', 'using', 'check'].includes(k)) throw bad(k, 'is not a policy field');
  if (typeof o.name !== 'string' || o.name.length === 0 || o.name.length > 63) throw bad('name', 'must be a name of 1-63 characters');
  const command = o.command ?? 'all';
  if (typeof command !== 'string' || !COMMANDS.includes(command)) throw bad('command', 'must be all, select, insert, update or delete');
  if (o.permissive !== undefined && typeof o.permissive !== 'boolean') throw bad('permissive', 'must be a boolean');
  const roles = o.roles ?? [];
  if (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string')) throw bad('roles', 'must be a list of role names');
  for (const k of ['using', 'check'] as const) if (o[k] !== undefined && o[k] !== null && typeof o[k] !== 'string') throw bad(k, 'must be a SQL expression string or null');
  const p: NamedPolicy = {
    name: o.name,
    command: command as NamedPolicy['command'],
    permissive: o.permissive !== false,
    roles: (roles as string[]).filter((r) => r !== 'public'),
    using: (o.using as string | null | undefined) ?? null,
    check: (o.check as string | null | undefined) ?? null,
  };
  checkPolicy(p);
  return p;
}

interface Terms {
  perm: Array<{ src: string; c: CompiledPolicy }>;
  restr: Array<{ src: string; c: CompiledPolicy }>;
}

/**
 * Compiles a table's named policies (each one separately: an error names the policy) and
 * combines them per operation. `policies` is the combined source text per op, the view
 * `GET …/rls` has always shown.
 */
export function compileSet(list: readonly NamedPolicy[], def: TableDef, lookup?: TableLookup, functions?: FunctionLookup): Pick<RlsState, 'policies' | 'compiled'> {
  if (list.length > MAX_POLICIES) throw new EdgeError('invalid_request', `a table has at most ${MAX_POLICIES} policies`);
  const seen = new Set<string>();
  const terms: Record<PolicyOp | 'update_check', Terms> = {
    select: { perm: [], restr: [] },
    insert: { perm: [], restr: [] },
    update: { perm: [], restr: [] },
    delete: { perm: [], restr: [] },
    update_check: { perm: [], restr: [] },
  };
  for (const p of list) {
    if (seen.has(p.name)) throw new EdgeError('invalid_request', `policy "${p.name}" for table "${def.name}" already exists`, { details: { sqlstate: '42710' } });
    seen.add(p.name);
    const one = (src: string, part: string): { src: string; c: CompiledPolicy } => {
      // note: a policy applies to its roles only: a permissive one grants nothing to the others,
      // a restrictive one does not restrict them.
      const roles = p.roles.map((r) => `'${r}'`).join(', ');
      const text = !p.roles.length ? src.trim() : p.permissive ? `auth.role() IN (${roles}) AND (${src})` : `auth.role() NOT IN (${roles}) OR (${src})`;
      try {
        return { src: text, c: compilePolicy(text, def, lookup, functions) };
      } catch (err) {
        if (!(err instanceof EdgeError)) throw err;
        throw new EdgeError(err.code, `policy "${p.name}" (${part}): ${err.message}`, err.details ? { details: err.details } : undefined);
      }
    };
    const using = p.using === null ? null : one(p.using, p.command === 'all' ? 'using' : p.command);
    const check = p.check === null ? null : p.check === p.using ? using : one(p.check, p.command === 'all' ? 'with check' : p.command);
    const add = (op: PolicyOp | 'update_check', t: { src: string; c: CompiledPolicy } | null): void => {
      if (t) (p.permissive ? terms[op].perm : terms[op].restr).push(t);
    };
    const covers = (op: PolicyOp): boolean => p.command === 'all' || p.command === op;
    if (covers('select')) add('select', using);
    if (covers('delete')) add('delete', using);
    if (covers('insert')) add('insert', check ?? using);
    if (covers('update')) {
      add('update', using);
      add('update_check', check ?? using);
    }
  }
  const policies: RlsState['policies'] = {};
  const compiled: RlsState['compiled'] = {};
  for (const op of [...POLICY_OPS, 'update_check'] as const) {
    const t = terms[op];
    if (t.perm.length === 0) continue;
    const src = combineText(t);
    const c = combineCompiled(t);
    if (op !== 'update_check') {
      policies[op] = src;
      compiled[op] = c;
    } else if (src !== policies.update) compiled.update_check = c;
  }
  return { policies, compiled };
}

function combineText(t: Terms): string {
  const perm = t.perm.length === 1 ? t.perm[0]!.src : t.perm.map((x) => `(${x.src})`).join(' OR ');
  if (t.restr.length === 0) return perm;
  return [perm, ...t.restr.map((x) => x.src)].map((x) => `(${x})`).join(' AND ');
}

function combineCompiled(t: Terms): CompiledPolicy {
  const parts = [...t.perm, ...t.restr].map((x) => x.c);
  const permSql = t.perm.length === 1 ? t.perm[0]!.c.sql : `(${t.perm.map((x) => x.c.sql).join(' OR ')})`;
  const sql = t.restr.length ? `(${[permSql, ...t.restr.map((x) => x.c.sql)].join(' AND ')})` : permSql;
  const refs = [...new Set(parts.flatMap((c) => c.refs ?? []))];
  const params = parts.flatMap((c) => c.params);
  const fns = [...new Set(parts.flatMap((c) => c.fns ?? []))];
  const out: CompiledPolicy = { sql, params };
  if (refs.length) out.refs = refs;
  if (fns.length) out.fns = fns;
  return out;
}
