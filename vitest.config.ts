import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

// API tests run twice: once per HTTP backend (docs/architecture.md "Tests"). Each test file starts its
// own server on an ephemeral port with a temporary data folder.
//
// note: speed (issue 12, `npm test` under 3 minutes on 2 cores). There are three projects: `core`
// (test/unit, test/cli, test/sql: files that pick their backend themselves or need none), `uws` and
// `node` (test/api and test/abuse, on that HTTP backend). Each runs with `isolate: false`: a worker
// process runs file after file of its project without re-importing the source for each (the tests
// are black-box and start their own server, so they share no module state). Vite transforms the
// source once per project and a worker starts per project, so fewer projects mean less of both:
// seven projects left the workers waiting 4–6 s at each change of project. The tests often wait on
// a server, a timer or a child process, so there are two workers more than the cores.
// `npm test` runs the type check and ESLint beside Vitest (package.json).
// The projects do not use
// `extends: true` (it would re-apply the root options, and `isolate` with them); they spread `base`.
const base = {
  testTimeout: 20_000,
  hookTimeout: 30_000,
  // note: no --no-node-snapshot: isolated-vm (functions) runs only in the servers' sandbox
  // processes, which start with it (docs/api.md "Sandbox"); the workers run servers as an
  // embedder does, without it.
  // note: writes each file's start and end when PE_TEST_TRACE names a file (CI: .ci/run).
  setupFiles: ['test/helpers/file-trace.ts'],
};
const shared = { ...base, isolate: false };

// note: Vitest queues the files of one group project by project in name order, each project's
// longest first by the last run's durations (by file size on a fresh clone, which has none), and a
// worker goes on with the next file only if it is of its own project. Name order put
// test/unit/http-stream.test.ts (1 GiB bodies, the longest file) last, alone on one core at the end;
// on a fresh clone, a short file that waits 15 s on a timer (api/realtime-long) ran last, alone.
// This order starts with the project holding the longest files, starts the files that are long
// by nature (timers, 1 GiB bodies, child processes) first in their project whatever the cache
// says, and ends with the many short API files, so the run ends with every worker busy.
const LONG_FIRST = [
  'unit/http-stream', 'cli/serve', 'abuse/http', 'api/realtime-long', 'cli/usage', 'sql/corpus', 'cli/lifetime',
  'api/ws', 'cli/admin', 'api/stream', 'api/db-triggers-recursion', 'abuse/sql', 'api/realtime-auth',
].map((f) => `test/${f}.test.ts`);
// note: API files whose subject sits behind dispatch — SQL translation, RLS, grants, triggers,
// views, the migrations — send plain JSON requests and read plain JSON answers: the HTTP backend
// has done its part before their subject begins, and every other API file (bodies, streams,
// WebSocket, SSE, CORS, limits, the rows API, GraphQL, JSON-RPC) still runs on both. `npm test`
// runs these on uWS only (about 15 s of CPU less; issue 12); CI runs them on both
// (PE_TEST_ALL_BACKENDS=1 in .ci/run), as does anyone who sets it.
const BEHIND_DISPATCH = [
  'db-alter-column', 'db-caller-default', 'db-functions', 'db-grants', 'db-graphql-relations', 'db-graphql-types',
  'db-introspect', 'db-lateral', 'db-policies', 'db-policy-functions', 'db-query-arrays', 'db-query-dml-cte',
  'db-reserved', 'db-rls', 'db-starter', 'db-triggers-before', 'db-triggers-recursion', 'db-triggers-recursion-upgrade',
  'db-triggers-same-script', 'db-triggers', 'db-two-doors', 'db-types-comments', 'db-views', 'migrations', 'migrations-more',
]
  .map((f) => `test/api/${f}.test.ts`)
  // note: the abuse battery's SQL file too (the SQL pool's scheduling, time budgets and result
  // caps, JSON-RPC's scopes).
  .concat('test/abuse/sql.test.ts');
const ALL_BACKENDS = process.env.PE_TEST_ALL_BACKENDS === '1';
const NODE_EXCLUDE = ALL_BACKENDS ? [] : BEHIND_DISPATCH;
const PROJECT_ORDER = ['core', 'uws', 'node'];
class LongestProjectsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification): number => {
      const i = PROJECT_ORDER.indexOf(f.project.name);
      return i < 0 ? PROJECT_ORDER.length : i;
    };
    const long = (f: TestSpecification): number => {
      const i = LONG_FIRST.indexOf(relative(f.project.config.root, f.moduleId));
      return i < 0 ? LONG_FIRST.length : i;
    };
    // note: Array.prototype.sort is stable: within a project, BaseSequencer's order stays.
    return sorted.sort((a, b) => rank(a) - rank(b) || long(a) - long(b));
  }
}

export default defineConfig({
  test: {
    ...base,
    maxWorkers: Math.max(4, availableParallelism() + 2),
    sequence: { sequencer: LongestProjectsFirst },
    // note: Vite's transforms of the TypeScript sources are kept on disk (node_modules/
    // .experimental-vitest-cache, keyed by each file's content), so a second run transforms only
    // what changed: about 10 s less of the main process's CPU per run.
    experimental: { fsModuleCache: true },
    projects: [
      { test: { ...shared, name: 'core', include: ['test/unit/**/*.test.ts', 'test/cli/**/*.test.ts', 'test/sql/**/*.test.ts'] } },
      // The API files and the lasting fault and abuse battery (issue 11; its files ask 60 s per case
      // with vi.setConfig: a 16 MiB GraphQL answer shares the cores with the other files).
      { test: { ...shared, name: 'uws', include: ['test/api/**/*.test.ts', 'test/abuse/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { test: { ...shared, name: 'node', include: ['test/api/**/*.test.ts', 'test/abuse/**/*.test.ts'], exclude: NODE_EXCLUDE, env: { PLATFORM_EDGE_HTTP: 'node' } } },
    ],
  },
});
