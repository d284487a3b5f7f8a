import type { ProjectLease } from '../../project/registry.js';
import { ENUMS } from '../../sql/pg/types-ddl.js';

/** An enum type's labels in declaration order (`_svc_meta.enums`, src/sql/pg/types-ddl.ts), or null when there is no such type. */
export function readEnum(lease: ProjectLease, name: string): string[] | null {
  const row = lease.stmt(`SELECT labels FROM ${ENUMS} WHERE name = ?`).get(name) as { labels: string } | undefined;
  return row ? (JSON.parse(row.labels) as string[]) : null;
}
