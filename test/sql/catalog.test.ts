import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { catalogCases } from './catalog-cases.js';
import { runOurs, runPg, same, startPg, type Entry, type Outcome } from './harness.js';

// The everyday functions and operators (issue 17 item 4), each on PostgreSQL (PGlite) and
// through POST /db/query, compared as the differential corpus compares them (harness.ts).
let s: TestServer;
let pg: PGlite;
beforeAll(async () => {
  [s, pg] = await Promise.all([startTestServer(), startPg()]);
}, 120_000);
afterAll(async () => {
  await s.close();
  await pg.close();
});

/**
 * Postgres' class 22 and 2201x messages our side words as Postgres does, beyond those
 * harness.ts already knows (they read as `??` there).
 */
const DATA_ERRORS = /^(cannot take (square root|logarithm)|zero raised to a negative power|a negative number raised to a non-integer power|field position must not be zero|invalid regular expression|regexp_match\(\) does not support|cannot delete (from|path)|cannot set path|cannot replace existing key|path element at position|requested length too large)/;

function classOf(o: Outcome): Outcome {
  if (o.ok || o.sqlClass !== '??' || !DATA_ERRORS.test(o.message)) return o;
  return { ...o, sqlClass: '22' };
}

describe('the function catalog against PostgreSQL', () => {
  it('has many cases', () => {
    expect(catalogCases.length).toBeGreaterThanOrEqual(180);
  });

  catalogCases.forEach((e: Entry, i) => {
    it(`#${i + 1} ${e.sql.slice(0, 100)}`, async () => {
      const theirs = await runPg(pg, e);
      const ours = classOf(await runOurs(s, e));
      if (!same(e, theirs, ours)) expect({ ours }).toEqual({ ours: theirs });
      if (!ours.ok) expect(ours.code).not.toBe('internal');
    });
  });
});
