// ESLint flat config: typescript-eslint's recommended rules, the promise rules of its typed
// set on src/ and test/ (typed linting through the tsconfig), plus the layering rules of
// docs/architecture.md "Layers": a module imports only its own layer or a lower one (entry >
// wiring > services > edge > http > lower > core), only src/http/ may import the HTTP libraries
// (src/net/, the outbound client, node:http(s) as a client), and src/net/ is imported only by
// services and server.ts. test/unit/layering.test.ts proves each rule fires.
import tseslint from 'typescript-eslint';

const HTTP_LIBS = ['uWebSockets.js', 'ws', 'node:http', 'http', 'node:https', 'https', 'node:http2', 'http2'];
const HTTP_PATHS = HTTP_LIBS.map((name) => ({ name, message: 'Only src/http/ may import HTTP libraries (docs/architecture.md "Layers").' }));
// The outbound client (src/net/) is used by services (and wired in server.ts), nothing lower.
const NO_NET = { group: ['**/net/*'], message: 'Only services and server.ts may use the outbound client (src/net/).' };
// What sits above the edge (entry, wiring, services): the edge and everything below never import it.
const ABOVE_EDGE = ['**/services/**', '**/cli/**', '**/server.js', '**/bootstrap.js'];
// What sits above the lower layers (sql, project, control, events, net): the edge and the HTTP backends too.
const ABOVE_LOWER = [...ABOVE_EDGE, '**/edge/**', '**/http/**'];
// The lower layers themselves: src/core/ sits below them and imports none of them.
const LOWER = ['**/sql/**', '**/project/**', '**/control/**', '**/events/**', '**/net/**'];
const LOWER_DIRS = ['src/sql/**', 'src/project/**', 'src/control/**', 'src/events/**'];

export default tseslint.config(
  // note: build/ is generated output (bundles, chunks, .d.ts), except the build script itself.
  { ignores: ['node_modules/', 'build/*', '!build/build.mjs', 'coverage/', '.platform-edge/'] },
  ...tseslint.configs.recommended,
  {
    // Type-aware rules (typed linting) on the TypeScript the tsconfig covers: a promise is
    // awaited, returned, handed to `.catch(...)` that reports, or marked `void` with a reason;
    // and no async function is passed where a void callback is expected. The .mjs/.js scripts
    // (bench/, build/, .ci/, bin/) are outside the tsconfig and stay untyped.
    files: ['src/**/*.ts', 'test/**/*.ts', 'vitest.config.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      '@typescript-eslint/no-implied-eval': 'error',
      '@typescript-eslint/no-for-in-array': 'error',
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/http/**', 'src/net/**', 'src/services/**', 'src/server.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: HTTP_PATHS, patterns: [NO_NET] }],
    },
  },
  {
    files: ['src/services/**/*.ts', 'src/server.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: HTTP_PATHS }],
    },
  },
  {
    files: ['src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ABOVE_EDGE, message: 'src/http/ must not import services, the CLI or the wiring.' }, NO_NET] }],
    },
  },
  {
    files: ['src/edge/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: HTTP_PATHS, patterns: [{ group: ABOVE_EDGE, message: 'src/edge/ must not import services, the CLI or the wiring.' }, NO_NET] },
      ],
    },
  },
  {
    // The lower layers: SQL translation and RLS, the project registry, the control plane, the
    // bus and change log. They may use each other, src/core/ and the base files (config, paths,
    // clock, version), and nothing above: no edge, HTTP backend, service, CLI or wiring.
    files: LOWER_DIRS.map((d) => `${d}/*.ts`),
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: HTTP_PATHS,
          patterns: [{ group: ABOVE_LOWER, message: 'A lower layer (sql, project, control, events) imports no edge, http, service, CLI or server.ts.' }, NO_NET],
        },
      ],
    },
  },
  {
    // src/core/: the one error type and the auth context, under every other layer: it imports
    // nothing of ours (the base files config, paths, clock and version aside).
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: HTTP_PATHS, patterns: [{ group: [...ABOVE_LOWER, ...LOWER], message: 'src/core/ is the lowest layer: it imports nothing of ours but config.' }] },
      ],
    },
  },
  {
    // src/net/ is the outbound HTTP client: node:http(s) as a client only, and a low layer
    // (beside control/ and events/): src/core/ (errors), config and version only.
    files: ['src/net/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: HTTP_LIBS.filter((n) => !['node:http', 'http', 'node:https', 'https'].includes(n)).map((name) => ({
            name,
            message: 'src/net/ is an HTTP client: node:http and node:https only.',
          })),
          patterns: [
            {
              group: [...ABOVE_LOWER, '**/control/**', '**/events/**', '**/project/**', '**/sql/**'],
              message: 'src/net/ is a low layer: it imports only src/core/, config and version.',
            },
          ],
        },
      ],
    },
  },
  {
    // API and abuse tests are black-box: they reach the server only through test/helpers/
    // (the boundary, which may import src/) and HTTP (docs/architecture.md "Tests").
    files: ['test/api/**/*.ts', 'test/abuse/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/src/**'], message: 'API tests are black-box: use test/helpers/, not src/.' }] }],
    },
  },
);
