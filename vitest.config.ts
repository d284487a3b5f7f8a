import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// API tests run twice: once per HTTP backend (docs/architecture.md "Tests"). Each test file starts its
// own server on an ephemeral port with a temporary data folder.
//
// note: speed (issue 12, `npm test` under 3 minutes on 2 cores). The unit, api and cli projects run
// with `isolate: false`: a worker process runs file after file of its project without re-importing
// the source for each (the tests are black-box and start their own server, so they share no module
// state). The tests mostly wait on a server or a child process, so there is one worker more than the
// cores leave free. The abuse and sql projects keep a fresh process per file; the abuse battery runs
// after all the others, one file at a time. The projects do not use
// `extends: true` (it would re-apply the root options, and `isolate` with them); they spread `base`.
const base = {
  testTimeout: 20_000,
  hookTimeout: 30_000,
  // note: isolated-vm (functions) needs V8 started with --no-node-snapshot (DESIGN.md §10),
  // as bin/platform-edge.js does for the CLI; the default pool (forks) passes this to each worker.
  execArgv: ['--no-node-snapshot'],
};
const shared = { ...base, isolate: false };
const abuse = { ...base, maxWorkers: 1, sequence: { groupOrder: 1 } };

export default defineConfig({
  test: {
    ...base,
    maxWorkers: Math.max(3, availableParallelism() - 1),
    projects: [
      { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { test: { ...shared, name: 'api-uws', include: ['test/api/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { test: { ...shared, name: 'api-node', include: ['test/api/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'node' } } },
      // The lasting fault and abuse battery (issue 11): each case a regression test, on both backends.
      // note: it runs last and alone (one file at a time, a fresh process each): its fair-scheduling and
      // cost-cap cases need the CPU time they measure out (test/abuse/sql.test.ts), as before issue 12.
      { test: { ...abuse, name: 'abuse-uws', include: ['test/abuse/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { test: { ...abuse, name: 'abuse-node', include: ['test/abuse/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'node' } } },
      { test: { ...shared, name: 'cli', include: ['test/cli/**/*.test.ts'] } },
      // The PGlite differential corpus of the SQL translator (docs/sql.md).
      { test: { ...base, name: 'sql', include: ['test/sql/**/*.test.ts'] } },
    ],
  },
});
