import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { serveAgain, startTestServer, type TestServer } from '../helpers/server.js';

// A project whose triggers were compiled before the bound on trigger work (docs/sql.md
// "Recursion", "Existing projects"): recursion stays off until its function is created again.

let first: TestServer;
let again: { url: string; close(): Promise<void> } | null = null;
afterAll(async () => {
  await again?.close();
  rmSync(first.dataDir, { recursive: true, force: true });
});

/** The same data folder served again (a restart after an upgrade). */
async function restart(): Promise<string> {
  await again?.close();
  again = await serveAgain(first.dataDir);
  return again.url;
}

it('keeps an old trigger non-recursive after an upgrade; create or replace function turns recursion on at the next open', async () => {
  first = await startTestServer();
  let url = first.url;
  const q = async (sql: string) => {
    const res = await fetch(`${url}/db/query`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-key': first.keys.service }, body: JSON.stringify({ sql, params: [] }) });
    return { status: res.status, body: (await res.json()) as { rows: Array<Record<string, unknown>>; error?: { message: string; details?: { sqlstate?: string } } } };
  };
  const fn = `create or replace function echo_again() returns trigger language plpgsql as $$ begin insert into echo (n) values (new.n + 1); return new; end $$`;
  expect((await q(`create table echo (id serial primary key, n int); ${fn}; create trigger echo_t after insert on echo for each row execute function echo_again();`)).status).toBe(200);
  await first.server.close();
  // the trigger as a version before the bound compiled it: without the pe_trg_step() call
  const db = new Database(join(first.dataDir, 'projects', first.projectId, 'project.db'));
  const old = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'pe_trg_echo_%'`).all() as Array<{ name: string; sql: string }>;
  expect(old).toHaveLength(1);
  db.exec(`DROP TRIGGER "${old[0]!.name}"`);
  db.exec(old[0]!.sql.replace('SELECT pe_trg_step(); ', ''));
  db.close();

  url = await restart();
  expect((await q(`insert into echo (n) values (1)`)).status).toBe(200);
  expect((await q(`select n from echo order by n`)).body.rows).toEqual([{ n: 1 }, { n: 2 }]);
  expect((await q(fn)).status).toBe(200);
  url = await restart();
  const r = await q(`insert into echo (n) values (10)`);
  expect(r.status).toBe(400);
  expect(r.body.error).toMatchObject({ message: 'stack depth limit exceeded', details: { sqlstate: '54001' } });
  expect((await q(`select count(*)::int as n from echo`)).body.rows).toEqual([{ n: 2 }]);
});
