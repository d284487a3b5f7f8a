// Database benchmarks (issue 4, "Performance"): row get by id, the same under an RLS
// policy with a Bearer token, a filtered list on 100k rows, and insert — each against
// bench/bare-db.mjs (bare uWS + better-sqlite3, same table shape, prepared statements)
// measured in the same run. Both sides hold 100k rows (city = "c" + n % 5000, indexed).
import { luaScript, runWrk, servers, apiCall, oncePerServer } from '../lib/index.mjs';

const SEED = 100_000;
const bareDb = { id: 'bare-db', label: 'bare uWS + better-sqlite3', cmd: [process.execPath, 'bench/bare-db.mjs', '0'] };
const edge = servers.edge('uws');
const pub = (info) => ({ 'x-service-key': info.keys.publishable });
const svc = (info) => ({ 'x-service-key': info.keys.service, 'content-type': 'application/json' });
const INSERT_BODY = { data: { city: 'c1', n: 1, note: 'benchmark row' } };

const api = (server, method, path, body, headers = svc(server.info)) => apiCall(server, method, path, body, headers);

/** Creates the tables once per server and fills bench_docs to 100k rows with wrk (bounded: at most 24 × 5 s). */
const seed = oncePerServer(doSeed);
async function doSeed(server) {
  await api(server, 'POST', '/db/tables', { name: 'bench_docs', type: 'document', indexes: [{ columns: ['city'] }] });
  const count = async () => (await api(server, 'GET', '/db/tables/bench_docs/rows?count=exact&limit=0')).total;
  for (let i = 0; i < 24 && (await count()) < SEED; i++) {
    await runWrk(server.url, { path: '/db/tables/bench_docs/rows', headers: svc(server.info), script: luaScript('db-seed.lua'), duration: '5s', connections: 32 });
  }
  const n = await count();
  process.stderr.write(`  seeded bench_docs with ${n} rows\n`);
  const first = (await api(server, 'GET', '/db/tables/bench_docs/rows?limit=1')).rows[0].id;
  // RLS: a relational table with owner = auth.uid(), one row owned by a registered user.
  const user = await api(server, 'POST', '/auth/register', { email: `bench-${server.pid}@example.com`, password: 'bench password 1' }, { ...pub(server.info), 'content-type': 'application/json' });
  await api(server, 'POST', '/db/tables', { name: 'bench_rls', type: 'relational', columns: [{ name: 'owner', type: 'uuid' }, { name: 'title', type: 'text' }] });
  await api(server, 'PUT', '/db/tables/bench_rls/rls', { enabled: true, policies: { select: 'owner = auth.uid()' } });
  const own = await api(server, 'POST', '/db/tables/bench_rls/rows', { data: { owner: user.user.id, title: 'mine' } });
  // The organisation pattern: a policy whose subquery reads members under members' own RLS.
  const org = '00000000-0000-4000-8000-000000000001';
  await api(server, 'POST', '/db/tables', { name: 'bench_members', type: 'relational', columns: [{ name: 'org_id', type: 'uuid' }, { name: 'user_id', type: 'uuid' }] });
  await api(server, 'POST', '/db/tables', { name: 'bench_org', type: 'relational', columns: [{ name: 'org_id', type: 'uuid' }, { name: 'title', type: 'text' }] });
  await api(server, 'PUT', '/db/tables/bench_members/rls', { enabled: true, policies: { select: 'user_id = auth.uid()' } });
  await api(server, 'PUT', '/db/tables/bench_org/rls', { enabled: true, policies: { select: 'exists (select 1 from bench_members m where m.org_id = bench_org.org_id and m.user_id = auth.uid())' } });
  await api(server, 'POST', '/db/tables/bench_members/rows', { data: { org_id: org, user_id: user.user.id } });
  const orgRow = await api(server, 'POST', '/db/tables/bench_org/rows', { data: { org_id: org, title: 'ours' } });
  return { first, rlsId: own.id, orgId: orgRow.id, token: user.access_token };
}

const bareGet = { server: bareDb, setup: async (s) => ({ path: `/rows/${s.info.first_id}` }) };

export default {
  id: 'db',
  title: 'Database: rows by id, RLS, filtered list, insert',
  scenarios: [
    {
      name: 'GET /db/tables/{t}/rows/{id} (publishable key) vs bare GET /rows/:id',
      baseline: bareGet,
      target: { server: edge, headers: pub, setup: async (s) => ({ path: `/db/tables/bench_docs/rows/${(await seed(s)).first}` }) },
      targets: { minRatio: 0.6, maxP99Ratio: 2 },
    },
    {
      name: "GET row by id with Bearer + RLS `owner = auth.uid()` vs bare GET /rows/:id",
      baseline: bareGet,
      target: {
        server: edge,
        setup: async (s) => {
          const x = await seed(s);
          return { path: `/db/tables/bench_rls/rows/${x.rlsId}`, headers: { ...pub(s.info), authorization: `Bearer ${x.token}` } };
        },
      },
      targets: { minRatio: 0.5, maxP99Ratio: 3 },
    },
    {
      name: 'GET row by id with Bearer + RLS `exists (select 1 from members m where …)` (members under its own RLS) vs bare GET /rows/:id',
      baseline: bareGet,
      target: {
        server: edge,
        setup: async (s) => {
          const x = await seed(s);
          return { path: `/db/tables/bench_org/rows/${x.orgId}`, headers: { ...pub(s.info), authorization: `Bearer ${x.token}` } };
        },
      },
      targets: { minRatio: 0.4, maxP99Ratio: 3 },
    },
    {
      name: 'GET rows?filter=city.eq.c42&limit=20 (100k rows, indexed) vs bare GET /rows?city=c42',
      baseline: { server: bareDb, path: '/rows?city=c42' },
      target: {
        server: edge,
        headers: pub,
        setup: async (s) => {
          await seed(s);
          return { path: '/db/tables/bench_docs/rows?filter=city.eq.c42&limit=20' };
        },
      },
      targets: { minRatio: 0.6 },
    },
    {
      name: 'POST /db/tables/{t}/rows (insert) vs bare POST /rows',
      baseline: { server: bareDb, path: '/rows', method: 'POST', body: INSERT_BODY, headers: { 'content-type': 'application/json' } },
      target: {
        server: edge,
        method: 'POST',
        body: INSERT_BODY,
        headers: (info) => ({ ...pub(info), 'content-type': 'application/json' }),
        setup: async (s) => {
          await seed(s);
          return { path: '/db/tables/bench_docs/rows' };
        },
      },
      targets: { minRatio: 0.5, maxP99Ratio: 2 },
    },
  ],
};
