import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { physicalName } from '../../src/project/schemas.js';

// The layering of docs/architecture.md "Layers" is enforced by ESLint (eslint.config.js); prove the rules bite.
// note: the files linted here exist only as text, which typed linting (eslint.config.js) cannot
// place in the tsconfig's project: the typed rules are off for them; the layering rules stay.
const untyped = { overrideConfig: tseslint.configs.disableTypeChecked };
describe('layering lint rule', () => {
  const eslint = new ESLint(untyped);
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

describe('layering of src/net/ (the outbound client)', () => {
  const eslint = new ESLint(untyped);
  const lint = async (code: string, filePath: string): Promise<string[]> => {
    const [r] = await eslint.lintText(code, { filePath });
    return r!.messages.map((m) => m.ruleId ?? m.message);
  };
  const use = (from: string): string => `import { OutboundClient } from '${from}';\nexport const x = OutboundClient;\n`;

  it('may use node:http(s) as a client, errors and config, and no higher layer', async () => {
    const ok = "import https from 'node:https';\nimport { EdgeError } from '../core/errors.js';\nimport type { Config } from '../config.js';\nexport const x = [https, EdgeError] as unknown as Config;\n";
    expect(await lint(ok, 'src/net/x.ts')).toEqual([]);
    for (const from of ['../services/db/types.js', '../edge/route.js', '../http/types.js', '../control/keys.js', '../events/bus.js', '../project/registry.js', '../sql/quote.js', '../server.js', '../cli/args.js']) {
      expect(await lint(`import * as m from '${from}';\nexport const x = m;\n`, 'src/net/x.ts')).toContain('no-restricted-imports');
    }
    for (const lib of ['uWebSockets.js', 'ws', 'node:http2']) {
      expect(await lint(`import m from '${lib}';\nexport const x = m;\n`, 'src/net/x.ts')).toContain('no-restricted-imports');
    }
  });

  it('is imported by services and server.ts only', async () => {
    expect(await lint(use('../../net/outbound.js'), 'src/services/webhooks/x.ts')).toEqual([]);
    expect(await lint(use('./net/outbound.js'), 'src/server.ts')).toEqual([]);
    for (const file of ['src/edge/x.ts', 'src/http/x.ts', 'src/control/x.ts', 'src/events/x.ts', 'src/sql/x.ts', 'src/project/x.ts']) {
      expect(await lint(use('../net/outbound.js'), file)).toContain('no-restricted-imports');
    }
    // the other rules still hold where the new one was added
    expect(await lint("import { createServer } from 'node:http';\nexport const x = createServer;\n", 'src/services/live/x.ts')).toContain('no-restricted-imports');
  });
});

describe('layering of the lower layers and src/core/', () => {
  const eslint = new ESLint(untyped);
  const lint = async (code: string, filePath: string): Promise<string[]> => {
    const [r] = await eslint.lintText(code, { filePath });
    return r!.messages.map((m) => m.ruleId ?? m.message);
  };
  const imp = (from: string): string => `import * as m from '${from}';\nexport const x = m;\n`;
  const ABOVE_LOWER = ['../edge/route.js', '../services/db/db.js', '../http/types.js', '../cli/args.js', '../server.js', '../net/outbound.js'];

  for (const dir of ['sql', 'project', 'control', 'events']) {
    it(`src/${dir}/ imports no edge, http, service, CLI, server.ts or outbound client`, async () => {
      for (const from of ABOVE_LOWER) expect(await lint(imp(from), `src/${dir}/x.ts`), from).toContain('no-restricted-imports');
      // deeper folders too (src/sql/pg/, src/sql/worker/)
      expect(await lint(imp('../../edge/pipeline.js'), `src/${dir}/sub/x.ts`)).toContain('no-restricted-imports');
      expect(await lint("import { createServer } from 'node:http';\nexport const x = createServer;\n", `src/${dir}/x.ts`)).toContain('no-restricted-imports');
    });

    it(`src/${dir}/ may import src/core/, config and the other lower layers`, async () => {
      for (const from of ['../core/errors.js', '../core/auth-context.js', '../config.js', '../project/registry.js', '../sql/table-model.js', '../events/bus.js', '../control/seal.js']) {
        expect(await lint(imp(from), `src/${dir}/x.ts`), from).toEqual([]);
      }
    });
  }

  it('src/core/ imports nothing of ours but config', async () => {
    for (const from of [...ABOVE_LOWER, '../sql/quote.js', '../project/registry.js', '../control/keys.js', '../events/bus.js']) {
      expect(await lint(imp(from), 'src/core/x.ts'), from).toContain('no-restricted-imports');
    }
    expect(await lint(imp('../config.js'), 'src/core/x.ts')).toEqual([]);
    expect(await lint(imp('./errors.js'), 'src/core/x.ts')).toEqual([]);
  });

  it('src/edge/ and src/http/ import no service, CLI or server.ts', async () => {
    for (const file of ['src/edge/x.ts', 'src/http/x.ts']) {
      for (const from of ['../services/db/db.js', '../cli/args.js', '../server.js']) expect(await lint(imp(from), file), `${file} ${from}`).toContain('no-restricted-imports');
      expect(await lint(imp('../core/errors.js'), file)).toEqual([]);
      expect(await lint(imp('../project/registry.js'), file)).toEqual([]);
    }
  });
});

describe('black-box API tests', () => {
  const eslint = new ESLint(untyped);
  const lint = async (code: string, filePath: string): Promise<string[]> => {
    const [r] = await eslint.lintText(code, { filePath });
    return r!.messages.map((m) => m.ruleId ?? m.message);
  };
  const imp = (from: string): string => `import * as m from '${from}';\nexport const x = m;\n`;

  it('test/api/ and test/abuse/ import no src/, only the helpers', async () => {
    for (const file of ['test/api/x.test.ts', 'test/abuse/x.test.ts']) {
      expect(await lint(imp('../../src/server.js'), file)).toContain('no-restricted-imports');
      expect(await lint(imp('../../src/version.js'), file)).toContain('no-restricted-imports');
      expect(await lint(imp('../helpers/server.js'), file)).toEqual([]);
    }
    expect(await lint(imp('../../src/server.js'), 'test/helpers/x.ts')).toEqual([]);
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
