import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { physicalName } from '../../src/project/schemas.js';

// The layering of DESIGN.md §3 is enforced by ESLint; prove the rule bites.
describe('layering lint rule', () => {
  const eslint = new ESLint();
  const lint = async (code: string, filePath: string): Promise<string[]> => {
    const [r] = await eslint.lintText(code, { filePath });
    return r!.messages.map((m) => m.ruleId ?? m.message);
  };

  it('forbids HTTP libraries outside src/http/', async () => {
    expect(await lint("import uws from 'uWebSockets.js';\nexport const x = uws;\n", 'src/services/live/x.ts')).toContain('no-restricted-imports');
    expect(await lint("import { createServer } from 'node:http';\nexport const x = createServer;\n", 'src/edge/x.ts')).toContain('no-restricted-imports');
  });

  it('allows them inside src/http/, which may not import services', async () => {
    expect(await lint("import { createServer } from 'node:http';\nexport const x = createServer;\n", 'src/http/x.ts')).toEqual([]);
    expect(await lint("import { liveRoutes } from '../services/live/routes.js';\nexport const x = liveRoutes;\n", 'src/http/x.ts')).toContain('no-restricted-imports');
  });
});

describe('reserved schemas', () => {
  it('maps public.x to x and a reserved schema to one quoted table name', () => {
    expect(physicalName(null, 'todos')).toBe('todos');
    expect(physicalName('public', 'profiles')).toBe('profiles');
    expect(physicalName('_svc_meta', 'auth_user_fields')).toBe('_svc_meta.auth_user_fields');
    expect(physicalName('pg_catalog', 'x')).toBeNull();
    expect(physicalName(null, 'Bad-Name')).toBeNull();
  });
});
