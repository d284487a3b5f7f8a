import type { ProjectLease } from '../../project/registry.js';

/** A row of `_svc_secrets.values`; `value` is sealed. */
export interface SecretRow {
  readonly name: string;
  readonly secret: number;
  readonly value: string;
  readonly updated_at: string;
}

/** A row of `_svc_secrets.flags`; `value` and `default_value` are JSON text. */
export interface FlagRow {
  readonly key: string;
  readonly value: string;
  readonly default_value: string;
  readonly enabled: number;
  readonly rollout: number;
  readonly description: string | null;
  readonly updated_at: string;
}

export function secretRows(lease: ProjectLease): SecretRow[] {
  return lease.stmt('SELECT name, secret, value, updated_at FROM "_svc_secrets.values" ORDER BY name').all() as SecretRow[];
}

export function secretRow(lease: ProjectLease, name: string): SecretRow | undefined {
  return lease.stmt('SELECT name, secret, value, updated_at FROM "_svc_secrets.values" WHERE name = ?').get(name) as SecretRow | undefined;
}

export function upsertSecret(lease: ProjectLease, row: SecretRow): void {
  lease
    .stmt(
      `INSERT INTO "_svc_secrets.values" (name, secret, value, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET secret = excluded.secret, value = excluded.value, updated_at = excluded.updated_at`,
    )
    .run(row.name, row.secret, row.value, row.updated_at);
}

/** Writes back a value resealed in the current format (same row, same name). */
export function resealSecret(lease: ProjectLease, name: string, sealed: string): void {
  lease.stmt('UPDATE "_svc_secrets.values" SET value = ? WHERE name = ?').run(sealed, name);
}

/** Whether a row was deleted. */
export function deleteSecret(lease: ProjectLease, name: string): boolean {
  return lease.stmt('DELETE FROM "_svc_secrets.values" WHERE name = ?').run(name).changes > 0;
}

export function flagRows(lease: ProjectLease): FlagRow[] {
  return lease.stmt('SELECT key, value, default_value, enabled, rollout, description, updated_at FROM "_svc_secrets.flags" ORDER BY key').all() as FlagRow[];
}

export function upsertFlag(lease: ProjectLease, row: FlagRow): void {
  lease
    .stmt(
      `INSERT INTO "_svc_secrets.flags" (key, value, default_value, enabled, rollout, description, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value, default_value = excluded.default_value, enabled = excluded.enabled,
         rollout = excluded.rollout, description = excluded.description, updated_at = excluded.updated_at`,
    )
    .run(row.key, row.value, row.default_value, row.enabled, row.rollout, row.description, row.updated_at);
}

/** Whether a row was deleted. */
export function deleteFlag(lease: ProjectLease, key: string): boolean {
  return lease.stmt('DELETE FROM "_svc_secrets.flags" WHERE key = ?').run(key).changes > 0;
}
