import { defineConfig } from 'vitest/config';

// API tests run twice: once per HTTP backend (DESIGN.md §2). Each test file starts its
// own server on an ephemeral port with a temporary data folder.
export default defineConfig({
  test: {
    testTimeout: 20_000,
    // note: isolated-vm (functions) needs V8 started with --no-node-snapshot (DESIGN.md §10),
    // as bin/platform-edge.js does for the CLI; the default pool (forks) passes this to each worker.
    execArgv: ['--no-node-snapshot'],
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'api-uws', include: ['test/api/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { extends: true, test: { name: 'api-node', include: ['test/api/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'node' } } },
      // The lasting fault and abuse battery (issue 11): each case a regression test, on both backends.
      { extends: true, test: { name: 'abuse-uws', include: ['test/abuse/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'uws' } } },
      { extends: true, test: { name: 'abuse-node', include: ['test/abuse/**/*.test.ts'], env: { PLATFORM_EDGE_HTTP: 'node' } } },
      { extends: true, test: { name: 'cli', include: ['test/cli/**/*.test.ts'] } },
      // The PGlite differential corpus of the SQL translator (docs/sql.md).
      { extends: true, test: { name: 'sql', include: ['test/sql/**/*.test.ts'] } },
    ],
  },
});
