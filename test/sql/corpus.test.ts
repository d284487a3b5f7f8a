import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { corpus } from './corpus.js';
import { runOurs, runPg, same, startPg } from './harness.js';

// The differential corpus (issue 5 §2): each statement on PostgreSQL (PGlite) and
// through POST /db/query, results compared after normalisation (docs/sql.md).
let s: TestServer;
let pg: PGlite;
beforeAll(async () => {
  [s, pg] = await Promise.all([startTestServer(), startPg()]);
}, 120_000);
afterAll(async () => {
  await s.close();
  await pg.close();
});

describe('PostgreSQL differential corpus', () => {
  it('has at least 250 statements', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(250);
  });

  corpus.forEach((e, i) => {
    it(`#${i + 1} ${e.sql.slice(0, 90)}`, async () => {
      const theirs = await runPg(pg, e);
      const ours = await runOurs(s, e);
      if (e.unsupported) {
        expect(ours.ok ? 'ok' : ours.code).toBe('unsupported_sql');
        return;
      }
      if (!same(e, theirs, ours)) {
        expect({ ours }).toEqual({ ours: theirs });
      }
      // note: an error on our side must be a client error, never a 500.
      if (!ours.ok) expect(ours.code).not.toBe('internal');
    });
  });
});
