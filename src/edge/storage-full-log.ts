import { EdgeError } from '../core/errors.js';

/**
 * One line for the operator when a write meets a full disk or a project's size cap (at most
 * one per 10 s, with how many more were refused meanwhile), never naming the body.
 */
export class StorageFullLog {
  #loggedAt = -Infinity;
  #suppressed = 0;

  constructor(private readonly logError: ((msg: string, err: unknown) => void) | undefined) {}

  report(err: unknown, projectId: string | null, requestId: string): void {
    const now = performance.now();
    if (now - this.#loggedAt < 10_000) {
      this.#suppressed++;
      return;
    }
    const cause = (err instanceof EdgeError ? err.cause : err) as { code?: unknown } | undefined;
    const code = typeof cause?.code === 'string' ? cause.code : 'SQLITE_FULL';
    const more = this.#suppressed > 0 ? ` (${this.#suppressed} more since the last report)` : '';
    this.#loggedAt = now;
    this.#suppressed = 0;
    this.logError?.(
      `storage full: a write to project ${projectId ?? '(none)'} failed with ${code} (request ${requestId}${more}); ` +
        'free disk space in the data folder or raise PLATFORM_EDGE_MAX_PROJECT_DB_BYTES; writes answer 507 until then',
      undefined,
    );
  }
}
