import { availableParallelism } from 'node:os';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

// API tests run twice: once per HTTP backend (docs/architecture.md "Tests"). Each test file starts its
// own server on an ephemeral port with a temporary data folder.
//
// note: speed (issue 12, `npm test` under 3 minutes on 2 cores). The unit, api and cli projects run
// with `isolate: false`: a worker process runs file after file of its project without re-importing
// the source for each (the tests are black-box and start their own server, so they share no module
// state). The tests mostly wait on a server or a child process, so there is one worker more than the
// cores leave free. The abuse and sql projects keep a fresh process per file; test/abuse/sql.test.ts
// runs after all the others, alone. `npm test` runs tsc and ESLint beside Vitest (package.json).
// The projects do not use
// `extends: true` (it would re-apply the root options, and `isolate` with them); they spread `base`.
const base = {
  testTimeout: 20_000,
  hookTimeout: 30_000,
  // note: isolated-vm (functions) needs V8 started with --no-node-snapshot (DESIGN.md §10),
  // as bin/platform-edge.js does for the CLI; the default pool (forks) passes this to each worker.
  execArgv: ['--no-node-snapshot'],
};
const shared = { ...base, isolate: false };
const abuse = { ...base, testTimeout: 60_000 };
const alone = { ...base, maxWorkers: 1, sequence: { groupOrder: 1 } };

// note: Vitest queues the files of one group project by project in name order (api-node, api-uws,
// cli, sql, unit), each project's longest first (by the last run's durations), and a worker goes on
// with the next file only if it is of its own project. Name order put test/unit/http-stream.test.ts
// (1 GiB bodies, the longest file) last, alone on one core at the end. This order starts the
// projects holding the longest files first and ends with the many short API files, so the run
// ends with every worker busy (issue 12).
const ABUSE_ALONE = 'test/abuse/sql.test.ts';

// note: API files whose subject sits behind dispatch — SQL translation, RLS, grants, triggers,
// views, the migrations — send plain JSON requests and read plain JSON answers: the HTTP backend
// has done its part before their subject begins, and every other API file (bodies, streams,
// WebSocket, SSE, CORS, limits, the rows API, GraphQL, JSON-RPC) still runs on both. `npm test`
// runs these on uWS only (about 15 s of CPU less; issue 12); CI runs them on both
// (PE_TEST_ALL_BACKENDS=1 in .ci/run), as does anyone who sets it.
const BEHIND_DISPATCH = [
  'db-caller-default', 'db-functions', 'db-grants', 'db-graphql-relations', 'db-graphql-types', 'db-introspect',
  'db-lateral', 'db-policies', 'db-policy-functions', 'db-query-arrays', 'db-query-dml-cte', 'db-reserved', 'db-rls',
  'db-starter', 'db-triggers-before', 'db-triggers', 'db-two-doors', 'db-types-comments', 'db-views',
  'migrations', 'migrations-more',
].map((f) => `test/api/${f}.test.ts`);
const NODE_API_EXCLUDE = process.env.PE_TEST_ALL_BACKENDS === '1' ? [] : BEHIND_DISPATCH;
const PROJECT_ORDER = ['unit', 'cli', 'sql', 'abuse-uws', 'abuse-node', 'api-uws', 'api-node'];
class LongestProjectsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification): number => {
      const i = PROJECT_ORDER.indexOf(f.project.name);
      return i < 0 ? PROJECT_ORDER.length : i;
    };
    // note: Array.prototype.sort is stable: within a project, BaseSequencer's order stays.
    return sorted.sort((a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    ...base,
    maxWorkers: Math.max(3, availableParallelism() - 1),
    sequence: { sequencer: LongestProjectsFirst },
    projects: [
      { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { test: { ...shared, name: 'api-uws', include: ['test/api/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { test: { ...shared, name: 'api-node', include: ['test/api/**/*.test.ts'], exclude: NODE_API_EXCLUDE, env: { PLATFORM_EDGE_HTTP: 'node' } } },
      // The lasting fault and abuse battery (issue 11): each case a regression test, on both backends,
      // a fresh process per file.
      // note: test/abuse/sql.test.ts runs last and alone (abuse-sql-*: one file at a time): its
      // fair-scheduling and time-budget cases need the CPU time they measure out. The other abuse
      // files run beside the other projects, with a longer time limit per case (a 16 MiB GraphQL answer
      // shares the cores with them).
      { test: { ...abuse, name: 'abuse-uws', include: ['test/abuse/**/*.test.ts'], exclude: [ABUSE_ALONE], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { test: { ...abuse, name: 'abuse-node', include: ['test/abuse/**/*.test.ts'], exclude: [ABUSE_ALONE], env: { PLATFORM_EDGE_HTTP: 'node' } } },
      { test: { ...alone, name: 'abuse-sql-uws', include: [ABUSE_ALONE], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { test: { ...alone, name: 'abuse-sql-node', include: [ABUSE_ALONE], env: { PLATFORM_EDGE_HTTP: 'node' } } },
      { test: { ...shared, name: 'cli', include: ['test/cli/**/*.test.ts'] } },
      // The PGlite differential corpus of the SQL translator (docs/sql.md).
      { test: { ...base, name: 'sql', include: ['test/sql/**/*.test.ts'] } },
    ],
  },
});
