// ESLint flat config: typescript-eslint's recommended rules, the promise rules of its typed
// set on src/ and test/ (typed linting through the tsconfig), plus the layering rules of
// DESIGN.md §3: only src/http/ may import the HTTP libraries (src/net/, the outbound
// client, node:http(s) as a client), src/http/ never imports a service, and src/net/
// imports no higher layer and is imported only by services and server.ts.
import tseslint from 'typescript-eslint';

const HTTP_LIBS = ['uWebSockets.js', 'ws', 'node:http', 'http', 'node:https', 'https', 'node:http2', 'http2'];
const HTTP_PATHS = HTTP_LIBS.map((name) => ({ name, message: 'Only src/http/ may import HTTP libraries (DESIGN.md §3).' }));
// The outbound client (src/net/) is used by services (and wired in server.ts), nothing lower.
const NO_NET = { group: ['**/net/*'], message: 'Only services and server.ts may use the outbound client (src/net/).' };

export default tseslint.config(
  { ignores: ['node_modules/', 'build/*.mjs', 'coverage/', '.platform-edge/'] },
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
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/services/**'], message: 'src/http/ must not import services.' }, NO_NET] }],
    },
  },
  {
    // src/net/ is the outbound HTTP client: node:http(s) as a client only, and a low layer
    // (beside control/ and events/): errors (still in src/edge/errors.ts), config and version only.
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
              group: ['**/services/**', '**/http/**', '**/edge/**', '!**/core/errors.js', '**/cli/**', '**/server.js', '**/control/**', '**/events/**', '**/project/**', '**/sql/**'],
              message: 'src/net/ is a low layer: it imports only errors, config and version.',
            },
          ],
        },
      ],
    },
  },
);
