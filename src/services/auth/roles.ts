import { conflict, invalidField } from '../../core/errors.js';
import type { ProjectLease } from '../../project/registry.js';
import * as store from './store.js';
import { BUILT_IN_ROLES, type Role } from './types.js';
import { roleName } from './validate.js';

const BUILT_IN = new Set(BUILT_IN_ROLES.map((r) => r.name));
const RESERVED = new Set(['service_role', 'authenticator', 'postgres', 'public', 'admin_operator']);

export interface RoleView extends Role {
  readonly built_in: boolean;
}

/** Built-in roles first, then the project's own. */
export function listRoles(p: ProjectLease): RoleView[] {
  return [
    ...BUILT_IN_ROLES.map((r) => ({ ...r, built_in: true })),
    ...store.customRoles(p).map((r) => ({ ...r, built_in: false })),
  ];
}

/**
 * Replaces the customer-defined roles with `{roles: [{name, description}]}` (or a bare
 * array). Built-in entries are accepted and ignored, so a GET body can be sent back.
 * Removing a role that users still have is 409.
 */
export function putRoles(p: ProjectLease, body: unknown): RoleView[] {
  const list = Array.isArray(body) ? body : (body as { roles?: unknown } | null)?.roles;
  if (!Array.isArray(list)) throw invalidField('roles', 'must be an array of {name, description}');
  if (list.length > 200) throw invalidField('roles', 'at most 200 roles');
  const roles: Role[] = [];
  const seen = new Set<string>();
  list.forEach((raw, i) => {
    if (typeof raw !== 'object' || raw === null) throw invalidField(`roles[${i}]`, 'must be an object');
    const o = raw as { name?: unknown; description?: unknown };
    const name = roleName(o.name, `roles[${i}].name`);
    if (RESERVED.has(name)) throw invalidField(`roles[${i}].name`, `"${name}" is reserved`);
    if (o.description !== undefined && o.description !== null && typeof o.description !== 'string') {
      throw invalidField(`roles[${i}].description`, 'must be a string');
    }
    if (BUILT_IN.has(name)) return;
    if (seen.has(name)) throw invalidField(`roles[${i}].name`, `"${name}" appears twice`);
    seen.add(name);
    roles.push({ name, description: typeof o.description === 'string' ? o.description.slice(0, 500) : '' });
  });
  store.tx(p, () => {
    for (const r of store.customRoles(p)) {
      const n = seen.has(r.name) ? 0 : store.usersWithRole(p, r.name);
      if (n > 0) throw conflict(`role "${r.name}" is still assigned to ${n} user(s)`);
    }
    store.replaceRoles(p, roles, new Date().toISOString());
  });
  return listRoles(p);
}
