import type { ProjectLease } from '../../project/registry.js';
import type { LiveEvent } from './types.js';

interface Row {
  seq: number;
  at: string;
  kind: 'request' | 'change';
  method: string | null;
  route: string | null;
  status: number | null;
  duration_ms: number | null;
  label: string | null;
}

const toEvent = (r: Row): LiveEvent =>
  r.kind === 'request'
    ? { seq: r.seq, at: r.at, kind: 'request', method: r.method!, route: r.route!, status: r.status!, duration_ms: r.duration_ms! }
    : { seq: r.seq, at: r.at, kind: 'change', label: r.label! };

/** SQL of the live log's capped table `_svc_meta.live_log`. */
export const liveStore = {
  maxSeq(lease: ProjectLease): number {
    return (lease.stmt('SELECT max(seq) AS s FROM "_svc_meta.live_log"').get() as { s: number | null }).s ?? 0;
  },

  /** Appends events and trims the table to `cap` rows, in one transaction. */
  append(lease: ProjectLease, events: readonly LiveEvent[], cap: number): void {
    const insert = lease.stmt(
      `INSERT OR IGNORE INTO "_svc_meta.live_log" (seq, at, kind, method, route, status, duration_ms, label)
       VALUES (@seq, @at, @kind, @method, @route, @status, @duration_ms, @label)`,
    );
    const trim = lease.stmt('DELETE FROM "_svc_meta.live_log" WHERE seq <= ?');
    lease.db.transaction(() => {
      for (const e of events) {
        insert.run(
          e.kind === 'request'
            ? { ...e, label: null }
            : { ...e, method: null, route: null, status: null, duration_ms: null },
        );
      }
      trim.run(events[events.length - 1]!.seq - cap);
    })();
  },

  since(lease: ProjectLease, since: number, limit: number): LiveEvent[] {
    const rows = lease.stmt('SELECT * FROM "_svc_meta.live_log" WHERE seq > ? ORDER BY seq LIMIT ?').all(since, limit) as Row[];
    return rows.map(toEvent);
  },
};
