// GraphQL benchmark (issue 17 item 11): a nested list through POST /db/graphql — 20 projects,
// each with its 5 tasks through the reverse relation (one grouped statement per level) — against
// one rows-API list of the same 100 tasks, same server, same run. Reported for information: the
// GraphQL request also parses (first time only: validated documents are cached), resolves 120
// objects field by field and reads two tables.
import { servers, apiCall, oncePerServer } from '../lib/index.mjs';

const edge = servers.edge('uws');
const svc = (info) => ({ 'x-service-key': info.keys.service, 'content-type': 'application/json' });
const api = (server, method, path, body) => apiCall(server, method, path, body, svc(server.info));

/** 20 projects with 5 tasks each, once per server. */
const seed = oncePerServer(async (server) => {
  await api(server, 'POST', '/db/tables', { name: 'gq_projects', type: 'relational', columns: [{ name: 'name', type: 'text', nullable: false }] });
  await api(server, 'POST', '/db/tables', {
    name: 'gq_tasks',
    type: 'relational',
    columns: [
      { name: 'title', type: 'text', nullable: false },
      { name: 'project_id', type: 'uuid', references: { table: 'gq_projects', column: 'id', on_delete: 'cascade' } },
    ],
  });
  for (let p = 0; p < 20; p++) {
    const { id } = await api(server, 'POST', '/db/tables/gq_projects/rows', { data: { name: `project ${p}` } });
    for (let t = 0; t < 5; t++) await api(server, 'POST', '/db/tables/gq_tasks/rows', { data: { title: `task ${p}.${t}`, project_id: id } });
  }
  return true;
});

const QUERY = '{ gq_projects(limit: 20) { id name gq_tasks(limit: 5) { id title } } }';

export default {
  id: 'graphql',
  title: 'GraphQL: a nested list vs the rows API list',
  scenarios: [
    {
      name: 'POST /db/graphql 20 projects × 5 tasks (reverse relation) vs GET /db/tables/{t}/rows?limit=100 (service key)',
      baseline: {
        server: edge,
        headers: svc,
        setup: async (s) => (await seed(s)) && { path: '/db/tables/gq_tasks/rows?limit=100' },
      },
      target: {
        server: edge,
        headers: svc,
        method: 'POST',
        path: '/db/graphql',
        setup: async (s) => (await seed(s)) && { body: { query: QUERY } },
      },
    },
  ],
};
