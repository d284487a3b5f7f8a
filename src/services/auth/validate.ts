import { EdgeError, invalidField } from '../../core/errors.js';
import { toStored } from '../db/column-values.js';
import { FIELD_TYPES, type FieldType, type UserField } from './types.js';

export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 256;
const EMAIL_MAX = 254;
const NAME_MAX = 200;
const METADATA_MAX = 16 * 1024;
// note: deliberately loose (RFC 5322 is not a validation grammar); one @, a dot in the domain, no spaces.
const EMAIL = /^[^\s@"<>()[\],;:\\]+@[^\s@"<>()[\],;:\\]+\.[^\s@"<>()[\],;:\\]+$/;
const IDENT = /^[a-z_][a-z0-9_]{0,62}$/;
const ROLE = /^[a-z_][a-z0-9_-]{0,62}$/;

/** profiles columns and auth names a user field may not take. */
export const RESERVED_FIELD_NAMES: ReadonlySet<string> = new Set([
  'id', 'email', 'name', 'password', 'password_hash', 'role', 'email_verified', 'user_metadata', 'metadata',
  'app_metadata', 'data', 'is_anonymous', 'created_at', 'updated_at', 'last_sign_in_at', 'phone', 'user_id',
  'aud', 'sub', 'oid', 'rowid', '_rowid_',
]);

export type Body = Record<string, unknown>;

/** The e-mail trimmed and lower-cased; 400 when it is not one. */
export function email(v: unknown, field = 'email'): string {
  if (typeof v !== 'string') throw invalidField(field, 'must be a string');
  const e = v.trim().toLowerCase();
  if (e.length === 0 || e.length > EMAIL_MAX || !EMAIL.test(e)) throw invalidField(field, 'is not a valid e-mail address');
  return e;
}

export function password(v: unknown, field = 'password'): string {
  if (typeof v !== 'string') throw invalidField(field, 'must be a string');
  const n = [...v].length;
  if (n < PASSWORD_MIN || n > PASSWORD_MAX) {
    throw invalidField(field, `must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters long`);
  }
  return v;
}

export function optionalName(v: unknown): string | null | undefined {
  if (v === undefined) return undefined;
  if (v === null) return null;
  if (typeof v !== 'string') throw invalidField('name', 'must be a string');
  if (v.length > NAME_MAX) throw invalidField('name', `must be at most ${NAME_MAX} characters`);
  return v;
}

/** A JSON object (not an array), at most 16 KiB serialized (UTF-8 bytes). */
export function metadata(v: unknown, field: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw invalidField(field, 'must be a JSON object');
  if (Buffer.byteLength(JSON.stringify(v)) > METADATA_MAX) throw invalidField(field, `must be at most ${METADATA_MAX} bytes`);
  return v as Record<string, unknown>;
}

/** `user_metadata` or its aliases `metadata` and `data`; undefined when none is sent. */
export function userMetadataOf(body: Body): Record<string, unknown> | undefined {
  for (const k of ['user_metadata', 'metadata', 'data']) {
    if (body[k] !== undefined) return metadata(body[k], k);
  }
  return undefined;
}

/** One level deep merge: keys of the patch replace, a key set to null is removed. */
export function mergeMetadata(base: Record<string, unknown>, patch: Record<string, unknown>, field: string) {
  const out = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return metadata(out, field);
}

export function boolean(v: unknown, field: string): boolean {
  if (typeof v !== 'boolean') throw invalidField(field, 'must be true or false');
  return v;
}

export function roleName(v: unknown, field = 'role'): string {
  if (typeof v !== 'string' || !ROLE.test(v)) {
    throw invalidField(field, 'must be 1-63 characters of a-z, 0-9, _ or -, starting with a letter or _');
  }
  return v;
}

/** A field value converted to what the profiles column stores; 400 naming the field when it does not fit. */
export function fieldValue(f: UserField, v: unknown): string | number | null {
  return toStored({ name: f.name, type: f.type, nullable: true }, v) as string | number | null;
}

/**
 * The profiles values of a signup: every `in_signup` field found in the body, typed;
 * required `in_signup` fields must be present (and not null).
 */
export function signupFields(fields: readonly UserField[], body: Body, existing?: Record<string, unknown>) {
  const out: Record<string, string | number | null> = {};
  for (const f of fields) {
    if (!f.in_signup) continue;
    const v = body[f.name];
    if (v === undefined || v === null) {
      if (f.required && (existing?.[f.name] ?? null) === null) throw invalidField(f.name, 'is required');
      continue;
    }
    out[f.name] = fieldValue(f, v);
  }
  return out;
}

/** Parses a PUT /auth/user-fields body into field definitions. */
export function fieldDefinitions(body: Body): UserField[] {
  const list = body.fields;
  if (!Array.isArray(list)) throw invalidField('fields', 'must be an array');
  if (list.length > 100) throw invalidField('fields', 'at most 100 fields');
  const seen = new Set<string>();
  return list.map((raw, i) => {
    const at = `fields[${i}]`;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalidField(at, 'must be an object');
    const o = raw as Body;
    if (typeof o.name !== 'string' || !IDENT.test(o.name)) {
      throw invalidField(`${at}.name`, 'must be 1-63 characters of a-z, 0-9 or _, starting with a letter or _');
    }
    if (RESERVED_FIELD_NAMES.has(o.name) || o.name.startsWith('_svc')) {
      throw invalidField(`${at}.name`, `"${o.name}" is reserved`);
    }
    if (seen.has(o.name)) throw invalidField(`${at}.name`, `"${o.name}" appears twice`);
    seen.add(o.name);
    if (!(FIELD_TYPES as readonly unknown[]).includes(o.type)) {
      throw invalidField(`${at}.type`, `must be one of ${FIELD_TYPES.join(', ')}`);
    }
    const flag = (k: string): boolean => (o[k] === undefined ? false : boolean(o[k], `${at}.${k}`));
    return { name: o.name, type: o.type as FieldType, required: flag('required'), in_signup: flag('in_signup') };
  });
}

/** Rejects keys a caller may not send to an endpoint. */
export function onlyKeys(body: Body, allowed: ReadonlySet<string>): void {
  for (const k of Object.keys(body)) {
    if (!allowed.has(k)) throw new EdgeError('invalid_field', `${k}: unknown field`, { details: { field: k } });
  }
}
