import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Recursive triggers (docs/sql.md "Functions and triggers", "Recursion"): a trigger that writes its
// own table fires again, as in Postgres; a runaway one is 54001 and a too-wide one ends at the time
// limit (statement_timeout), rolled back whole. The rows of the bounded ones are what PGlite answers for the same SQL (PGlite itself fails
// on the runaway ones with "ERRORDATA_STACK_SIZE exceeded"; Postgres answers 54001).

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
async function call(method: string, path: string, body?: unknown, key: string = s.keys.service) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const q = (sql: string, params: unknown[] = []) => call('POST', '/db/query', { sql, params });
const ok = async (sql: string, params: unknown[] = []) => {
  const r = await q(sql, params);
  expect(r.status, `${sql}: ${r.text}`).toBe(200);
  return r.body as { rows: Record<string, unknown>[]; row_count: number };
};
const depthError = (r: { status: number; body: { error: { message: string; details?: { sqlstate?: string } } } }) => {
  expect(r.status).toBe(400);
  expect(r.body.error.message).toBe('stack depth limit exceeded');
  expect(r.body.error.details?.sqlstate).toBe('54001');
};

beforeAll(async () => {
  // note: a runaway's 1000 levels take ~0.5 s of SQL here; on a loaded machine that must still be
  // 54001, not the 5 s default time limit.
  s = await startTestServer({ sqlTimeoutMs: 30_000 });
  expect((await call('POST', '/db/tables', { name: 'chain', type: 'relational', columns: [{ name: 'depth', type: 'int8' }] })).status).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'spin', type: 'relational', columns: [{ name: 'n', type: 'int8' }] })).status).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'echo', type: 'relational', columns: [{ name: 'n', type: 'int8' }] })).status).toBe(201);
  await ok(`
    create function chain_more() returns trigger language plpgsql as $$
    begin if new.depth < 5 then insert into chain (depth) values (new.depth + 1); end if; return new; end $$;
    create trigger chain_t after insert on chain for each row execute function chain_more();
    create function spin_again() returns trigger language plpgsql as $$ begin update spin set n = n + 1 where id = new.id; return new; end $$;
    create trigger spin_t after update on spin for each row execute function spin_again();
    create function echo_again() returns trigger language plpgsql as $$ begin insert into echo (n) values (new.n + 1); return new; end $$;
    create trigger echo_t after insert on echo for each row execute function echo_again();`);
});
afterAll(() => s.close());

describe('a trigger that recurses until its own condition stops it', () => {
  it('an IF in the body: the rows Postgres writes, through SQL and the rows API', async () => {
    await ok(`insert into chain (depth) values (0)`);
    expect((await ok(`select depth from chain order by depth`)).rows.map((r) => r.depth)).toEqual([0, 1, 2, 3, 4, 5]);
    const w = await call('POST', '/db/tables/chain/rows', { data: { depth: 3 } });
    expect(w.status, w.text).toBe(201);
    expect((await ok(`select depth, count(*)::int as n from chain group by depth order by depth`)).rows).toEqual([
      { depth: 0, n: 1 }, { depth: 1, n: 1 }, { depth: 2, n: 1 }, { depth: 3, n: 2 }, { depth: 4, n: 2 }, { depth: 5, n: 2 },
    ]);
  });

  it('a WHEN clause, two rows per level: a tree of 1 + 2 + 4 + 8', async () => {
    await ok(`
      create table tree (id serial primary key, d int);
      create function tree_more() returns trigger language plpgsql as $$
      begin insert into tree (d) values (new.d + 1); insert into tree (d) values (new.d + 1); return new; end $$;
      create trigger tree_t after insert on tree for each row when (new.d < 3) execute function tree_more();
      insert into tree (d) values (0);`);
    expect((await ok(`select d, count(*)::int as n from tree group by d order by d`)).rows).toEqual([
      { d: 0, n: 1 }, { d: 1, n: 2 }, { d: 2, n: 4 }, { d: 3, n: 8 },
    ]);
  });

  it('an AFTER UPDATE that updates its own row until a condition: counts down as Postgres', async () => {
    await ok(`
      create table countdown (id serial primary key, n int, steps int default 0);
      create function count_down() returns trigger language plpgsql as $$
      begin if new.n > 0 then update countdown set n = n - 1, steps = steps + 1 where id = new.id; end if; return new; end $$;
      create trigger countdown_t after update on countdown for each row execute function count_down();
      insert into countdown (n) values (0);
      update countdown set n = 7;`);
    expect((await ok(`select n, steps from countdown`)).rows).toEqual([{ n: 0, steps: 7 }]);
    const w = await call('PATCH', '/db/tables/countdown/rows/1', { data: { n: 2 } });
    expect(w.status, w.text).toBe(200);
    expect((await ok(`select n, steps from countdown`)).rows).toEqual([{ n: 0, steps: 9 }]);
  });
});

describe('a runaway trigger', () => {
  it('an AFTER UPDATE that updates its own row forever: 54001 through SQL and the rows API, nothing written', async () => {
    const w = await call('POST', '/db/tables/spin/rows', { data: { n: 0 } });
    expect(w.status, w.text).toBe(201);
    depthError(await q(`update spin set n = 1`));
    const id = String(w.body.id);
    depthError(await call('PATCH', `/db/tables/spin/rows/${id}`, { data: { n: 5 } }));
    expect((await ok(`select n from spin`)).rows).toEqual([{ n: 0 }]);
  });

  it('an insert into its own table forever: 54001 through SQL and the rows API, nothing written', async () => {
    depthError(await q(`insert into echo (n) values (1)`));
    depthError(await call('POST', '/db/tables/echo/rows', { data: { n: 1 } }));
    expect((await ok(`select count(*)::int as n from echo`)).rows).toEqual([{ n: 0 }]);
  });

  it('a sign-up whose trigger starts a runaway chain: 400 54001, no user made', async () => {
    await ok(`
      create table signup_log (id serial primary key, email text);
      create function log_signup() returns trigger language plpgsql as $$ begin insert into signup_log (email) values (new.email); return new; end $$;
      create trigger log_signup_t after insert on auth.users for each row execute function log_signup();
      create function log_again() returns trigger language plpgsql as $$ begin insert into signup_log (email) values (new.email); return new; end $$;
      create trigger log_again_t after insert on signup_log for each row execute function log_again();`);
    const r = await call('POST', '/auth/register', { email: 'loop@example.com', password: 'correct horse battery' }, s.keys.publishable);
    depthError(r);
    expect((await ok(`select (select count(*) from auth.users where email = 'loop@example.com')::int as users, (select count(*) from signup_log)::int as logged`)).rows).toEqual([{ users: 0, logged: 0 }]);
    await ok(`drop trigger log_signup_t on auth.users`);
  });

  it('two tables inserting into each other forever: 54001, nothing written', async () => {
    await ok(`
      create table ping (id serial primary key, n int);
      create table pong (id serial primary key, n int);
      create function to_pong() returns trigger language plpgsql as $$ begin insert into pong (n) values (new.n + 1); return new; end $$;
      create function to_ping() returns trigger language plpgsql as $$ begin insert into ping (n) values (new.n + 1); return new; end $$;
      create trigger ping_t after insert on ping for each row execute function to_pong();
      create trigger pong_t after insert on pong for each row execute function to_ping();`);
    depthError(await q(`insert into ping (n) values (1)`));
    expect((await ok(`select (select count(*) from ping)::int as ping, (select count(*) from pong)::int as pong`)).rows).toEqual([{ ping: 0, pong: 0 }]);
  });

  it('a trigger doubling its rows at each level ends at the time limit, nothing written, the server still answering', async () => {
    await ok(`
      create table bomb (id serial primary key, d int);
      create function bomb_more() returns trigger language plpgsql as $$
      begin if new.d < 22 then insert into bomb (d) values (new.d + 1); insert into bomb (d) values (new.d + 1); end if; return new; end $$;
      create trigger bomb_t after insert on bomb for each row execute function bomb_more();`);
    expect((await call('POST', '/db/tables', { name: 'wide', type: 'relational', columns: [{ name: 'd', type: 'int8' }] })).status).toBe(201);
    await ok(`
      create function wide_more() returns trigger language plpgsql as $$
      begin if new.d < 22 then insert into wide (d) values (new.d + 1); insert into wide (d) values (new.d + 1); end if; return new; end $$;
      create trigger wide_t after insert on wide for each row execute function wide_more();`);
    // note: /db/query's own time limit ends it (a small one asked for here; the server's is long
    // for the depth cases above); the rows API's write has the main thread's MAIN_TRIGGER_MS (2 s).
    const r = await call('POST', '/db/query', { sql: `insert into bomb (d) values (0)`, timeout_ms: 1500 });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toEqual({ code: 'statement_timeout', message: 'the statement ran longer than its time limit of 1500 ms and was cancelled' });
    const w = await call('POST', '/db/tables/wide/rows', { data: { d: 0 } });
    expect(w.status, w.text).toBe(400);
    expect(w.body.error).toEqual({ code: 'statement_timeout', message: 'the triggers of this write ran longer than 2000 ms and were cancelled (the write is rolled back)' });
    expect((await ok(`select (select count(*) from bomb)::int as bomb, (select count(*) from wide)::int as wide`)).rows).toEqual([{ bomb: 0, wide: 0 }]);
    // the bound is per statement: the next ones run as usual
    await ok(`insert into chain (depth) values (4)`);
    expect((await call('GET', '/db/tables/chain/rows?limit=1')).status).toBe(200);
  });
});
