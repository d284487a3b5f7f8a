/** Every event the in-process bus carries, by name. Each payload names its project and time. */
export interface EdgeEvents {
  /** A committed row change (emitted after commit only). */
  'db.change': {
    projectId: string;
    at: string;
    seq: number;
    op: 'insert' | 'update' | 'delete';
    table: string;
    id: string;
    data: Record<string, unknown> | null;
    old: Record<string, unknown> | null;
  };
  /** A request the edge answered (for the live log and public traffic). */
  'request.logged': {
    projectId: string | null;
    at: string;
    method: string;
    route: string;
    status: number;
    durationMs: number;
  };
  /** An API key was revoked or a project deleted: caches must forget it. */
  'key.revoked': { projectId: string; at: string; keyId: string };
  'project.deleted': { projectId: string; at: string };
  'auth.session.revoked': { projectId: string; at: string; sessionId: string };
  /** A user signed up (or signed in anonymously); emitted after commit. */
  'auth.user.created': { projectId: string; at: string; userId: string; isAnonymous: boolean };
  /** A secret or setting was written or deleted (its name only, never a value); emitted after commit. */
  'secrets.changed': { projectId: string; at: string; name: string; op: 'put' | 'delete' };
  /** A feature flag was written or deleted; for a realtime `flags` channel. Emitted after commit. */
  'flags.changed': { projectId: string; at: string; key: string; op: 'put' | 'delete' };
}

export type EdgeEventName = keyof EdgeEvents;
