// ESLint flat config: typescript-eslint's recommended rules, plus the layering rules of
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
              group: ['**/services/**', '**/http/**', '**/edge/**', '!**/edge/errors.js', '**/cli/**', '**/server.js', '**/control/**', '**/events/**', '**/project/**', '**/sql/**'],
              message: 'src/net/ is a low layer: it imports only errors, config and version.',
            },
          ],
        },
      ],
    },
  },
);
