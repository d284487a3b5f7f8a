// ESLint flat config: typescript-eslint's recommended rules, plus the layering rules of
// DESIGN.md §3: only src/http/ may import the HTTP libraries, and src/http/ never
// imports a service.
import tseslint from 'typescript-eslint';

const HTTP_LIBS = ['uWebSockets.js', 'ws', 'node:http', 'http', 'node:https', 'https', 'node:http2', 'http2'];

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
    ignores: ['src/http/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: HTTP_LIBS.map((name) => ({ name, message: 'Only src/http/ may import HTTP libraries (DESIGN.md §3).' })),
        },
      ],
    },
  },
  {
    files: ['src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/services/**'], message: 'src/http/ must not import services.' }] }],
    },
  },
);
