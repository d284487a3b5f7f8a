import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { corpus } from './corpus.js';
import { ourClass, runOurs, runPg, same, startPg, type Outcome } from './harness.js';

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
  it('has at least 1357 statements', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(1357);
  });

  it('counts two failures as a match only when they are the same kind (SQLSTATE class)', () => {
    const e = { sql: 'x' };
    const pg = (code: string): Outcome => ({ ok: false, code, message: '', sqlClass: code.slice(0, 2) });
    const ours = (code: string, message = '', details?: Record<string, unknown>): Outcome => ({ ok: false, code, message, sqlClass: ourClass(code, message, details) });
    expect(same(e, pg('23505'), ours('conflict'))).toBe(true);
    expect(same(e, pg('23502'), ours('invalid_field'))).toBe(true);
    expect(same(e, pg('22P02'), ours('invalid_request', 'invalid input syntax for type uuid: "x"'))).toBe(true);
    expect(same(e, pg('42P01'), ours('invalid_request', 'no such table: t'))).toBe(true);
    expect(same(e, pg('42601'), ours('unsupported_sql', 'syntax error', { construct: 'syntax' }))).toBe(true);
    // A 409 turned into a refusal, a syntax error into a data error, an unknown answer: no match.
    expect(same(e, pg('23505'), ours('unsupported_sql', 'not supported: x', { construct: 'x' }))).toBe(false);
    expect(same(e, pg('42601'), ours('invalid_request', 'invalid input syntax for type integer: "a"'))).toBe(false);
    expect(same(e, pg('22012'), ours('invalid_request', 'something else'))).toBe(false);
    expect(same(e, pg('22012'), ours('internal'))).toBe(false);
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
