import type { AuthContext } from '../../core/auth-context.js';
import { invalidField } from '../../core/errors.js';
import { bindPolicy } from '../../sql/rls.js';
import { holds, SELECT } from '../../sql/grants.js';
import { parseListQuery } from '../db/filters.js';
import type { CompiledPolicy, TableInfo } from '../../sql/table-model.js';
import type { StreamQuery } from './types.js';

/** A missing select policy on an RLS-enabled table denies (as in the rows API). */
const DENY: CompiledPolicy = { sql: '(0)', params: [] };
const CHANNEL = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Parses `filter=`, `or=`, `select=` with the rows API's parser (other names are the caller's to check). */
export function parseStreamQuery(q: URLSearchParams): StreamQuery {
  const sub = new URLSearchParams();
  const parts: string[] = [];
  for (const name of ['filter', 'or', 'select'] as const) {
    for (const v of q.getAll(name)) {
      sub.append(name, v);
      parts.push(`${name}=${v}`);
    }
  }
  const lq = parseListQuery(sub);
  return { filters: lq.filters, or: lq.or, select: lq.select, key: parts.length ? JSON.stringify(parts) : '' };
}

export function checkChannel(channel: unknown): string {
  if (typeof channel !== 'string' || !CHANNEL.test(channel)) throw invalidField('channel', 'must be 1-128 letters, digits, "_", ".", ":" or "-"');
  return channel;
}

/**
 * The select policy of a caller, bound; null when RLS does not apply (as the rows API decides).
 * A caller whose role lost SELECT on the table (REVOKE after the stream opened) sees nothing.
 */
export function selectPolicy(t: TableInfo, auth: AuthContext): { p: CompiledPolicy; values: unknown[] } | null {
  if (!holds(t.grants, auth, SELECT)) return { p: DENY, values: [] };
  if (!t.rls.enabled || auth.role === 'service_role') return null;
  // note: a policy that cannot be used (a policy cycle, 42P17) shows a stream nothing.
  const c = t.rls.compiled.select;
  const p = c && !c.error ? c : DENY;
  return { p, values: p.params.length ? bindPolicy(p.params, auth) : [] };
}

/** What decides visibility besides the filter: the role and user, and their claims but the token's own. */
export function authKey(a: AuthContext): string {
  if (a.role === 'service_role') return 'service';
  const u = a.user;
  if (u === null) return `anon:${a.role}`;
  const { exp: _exp, iat: _iat, jti: _jti, nbf: _nbf, ...rest } = u.claims;
  return JSON.stringify([a.role, u.id, u.aal, rest]);
}

/** `select=` applied to a change's `data`/`old` as a list applies it (a document's dotted paths become flat keys). */
export function pickFields(t: TableInfo, select: string[][] | null, data: Record<string, unknown> | null): Record<string, unknown> | null {
  if (data === null || select === null) return data;
  const out: Record<string, unknown> = {};
  for (const path of select) {
    if (t.def.kind === 'document') {
      if (path.length === 1 && (path[0] === 'id' || path[0] === 'created_at' || path[0] === 'updated_at')) continue;
      const segs = path[0] === 'data' && path.length > 1 ? path.slice(1) : path;
      let v: unknown = data;
      for (const s of segs) v = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[s] : undefined;
      out[segs.join('.')] = v === undefined ? null : v;
    } else {
      const n = path.join('.');
      if (n in data) out[n] = data[n];
    }
  }
  return out;
}
