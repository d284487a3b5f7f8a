// Raw SQL benchmark (issue 5, "Performance"): a repeated `SELECT … WHERE id = $1` through
// POST /db/query (translated once, then cached; run in the SQL worker pool) against the
// same read through GET /db/tables/{t}/rows/{id}, same server, same run. Target: ≥ 70 %.
import { servers, apiCall, oncePerServer } from '../lib/index.mjs';

const edge = servers.edge('uws');
const svc = (info) => ({ 'x-service-key': info.keys.service, 'content-type': 'application/json' });

const api = (server, method, path, body) => apiCall(server, method, path, body, svc(server.info));

/** One relational table with 1000 rows (made through raw SQL), once per server. */
const seed = oncePerServer(doSeed);
async function doSeed(server) {
  await api(server, 'POST', '/db/query', {
    sql: `create table bench_sql (id uuid primary key default gen_random_uuid(), title text not null, n int, created_at timestamptz not null default now(), updated_at timestamptz not null default now());
          insert into bench_sql (title, n) with recursive r(i) as (select 1 union all select i + 1 from r where i < 1000) select 'row ' || i, i from r`,
  });
  const r = await api(server, 'POST', '/db/query', { sql: 'select id from bench_sql where n = 500' });
  return r.rows[0].id;
}

export default {
  id: 'sql',
  title: 'Raw SQL: POST /db/query vs the rows API',
  scenarios: [
    {
      name: 'POST /db/query `select … where id = $1` vs GET /db/tables/{t}/rows/{id} (service key)',
      baseline: {
        server: edge,
        headers: svc,
        setup: async (s) => ({ path: `/db/tables/bench_sql/rows/${await seed(s)}` }),
      },
      target: {
        server: edge,
        headers: svc,
        method: 'POST',
        path: '/db/query',
        setup: async (s) => ({ body: { sql: 'select id, title, n, created_at, updated_at from bench_sql where id = $1', params: [await seed(s)] } }),
      },
      targets: { minRatio: 0.7 },
    },
  ],
};
