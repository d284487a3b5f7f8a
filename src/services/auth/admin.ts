import { intParam } from '../../core/query-params.js';
import { invalidField, notFound } from '../../core/errors.js';
import type { ProjectLease } from '../../project/registry.js';
import * as store from './store.js';
import { toUser, type User } from './types.js';
import * as v from './validate.js';

const PATCH_KEYS = new Set(['role', 'user_metadata', 'metadata', 'data', 'app_metadata', 'email_verified']);

/** A page of users, newest first: `?email=` (or `search`) substring, `?role=`, `?limit=`, `?offset=`. */
export function listUsers(p: ProjectLease, q: URLSearchParams) {
  const limit = intParam(q, 'limit', 100, 1, 1000);
  const offset = intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
  const email = q.get('email') ?? q.get('search');
  const { rows, total } = store.listUsers(p, { email: email || null, role: q.get('role') || null, limit, offset });
  const next = offset + rows.length < total ? offset + rows.length : null;
  return { users: rows.map(toUser), limit, offset, next_offset: next, total };
}

export function getUser(p: ProjectLease, id: string): User {
  const row = store.userById(p, id);
  if (!row) throw notFound('user', id);
  return toUser(row);
}

/** Administrator changes: `role` (built in or defined), `user_metadata`, `app_metadata`, `email_verified`. */
export function updateUser(p: ProjectLease, id: string, body: v.Body): User {
  v.onlyKeys(body, PATCH_KEYS);
  const row = store.userById(p, id);
  if (!row) throw notFound('user', id);
  const patch: store.UserPatch = { updated_at: new Date().toISOString() };
  if (body.role !== undefined) {
    const role = v.roleName(body.role);
    if (role !== 'authenticated' && role !== 'anon' && !store.roleExists(p, role)) {
      throw invalidField('role', `"${role}" is not a defined role (PUT /auth/roles)`);
    }
    patch.role = role;
  }
  const meta = v.userMetadataOf(body);
  if (meta) patch.user_metadata = JSON.stringify(v.mergeMetadata(JSON.parse(row.user_metadata), meta, 'user_metadata'));
  if (body.app_metadata !== undefined) {
    const app = v.metadata(body.app_metadata, 'app_metadata');
    patch.app_metadata = JSON.stringify(v.mergeMetadata(JSON.parse(row.app_metadata), app, 'app_metadata'));
  }
  if (body.email_verified !== undefined) patch.email_verified = v.boolean(body.email_verified, 'email_verified') ? 1 : 0;
  store.updateUser(p, id, patch);
  return toUser(store.userById(p, id)!);
}

