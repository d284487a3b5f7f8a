import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../src/sql/pg/parse.js';
import { bindPolicy, compilePolicy } from '../../src/sql/rls.js';
import type { AuthContext } from '../../src/core/auth-context.js';
import type { TableDef } from '../../src/sql/table-model.js';

beforeAll(loadParser);

const doc: TableDef = { name: 'todos', kind: 'document', columns: [], indexes: [], created_at: null };
const rel: TableDef = {
  name: 'docs',
  kind: 'relational',
  columns: [
    { name: 'owner', type: 'uuid', nullable: true, default: null, unique: false, references: null },
    { name: 'level', type: 'int8', nullable: true, default: null, unique: false, references: null },
    { name: 'meta', type: 'jsonb', nullable: true, default: null, unique: false, references: null },
  ],
  indexes: [],
  created_at: null,
};

describe('compilePolicy (Postgres → SQLite)', () => {
  it.each([
    ['owner = auth.uid()', rel, '(("owner" = ?))', [{ k: 'uid' }]],
    ["data->>'owner' = auth.uid()", doc, `((json_extract("data", '$.owner') = ?))`, [{ k: 'uid' }]],
    ["data->'a'->>'b' = 'x'", doc, `((json_extract("data", '$.a.b') = ?))`, [{ k: 'lit', v: 'x' }]],
    ["auth.role() = 'authenticated'", rel, '((? = ?))', [{ k: 'role' }, { k: 'lit', v: 'authenticated' }]],
    ["auth.jwt() ->> 'tier' = 'gold'", rel, '((? = ?))', [{ k: 'jwt', claim: 'tier' }, { k: 'lit', v: 'gold' }]],
    ['true', rel, '(1)', []],
    ['false', rel, '(0)', []],
    ['level >= 5 AND NOT (owner IS NULL)', rel, '((("level" >= ?) AND (NOT ("owner" IS NULL))))', [{ k: 'lit', v: 5 }]],
    ['level IN (1, 2) OR level <> 3', rel, '((("level" IN (?, ?)) OR ("level" <> ?)))', [{ k: 'lit', v: 1 }, { k: 'lit', v: 2 }, { k: 'lit', v: 3 }]],
    ['level != -2.5', rel, '(("level" <> ?))', [{ k: 'lit', v: -2.5 }]],
    ['owner IS NOT NULL', rel, '(("owner" IS NOT NULL))', []],
    ["owner LIKE 'a%'", rel, '(("owner" LIKE ?))', [{ k: 'lit', v: 'a%' }]],
    ["owner = 'it''s'", rel, '(("owner" = ?))', [{ k: 'lit', v: "it's" }]],
    ["meta->>'k' = 'v'", rel, `((json_extract("meta", '$.k') = ?))`, [{ k: 'lit', v: 'v' }]],
  ])('%s', (src, def, sql, params) => {
    expect(compilePolicy(src, def)).toEqual({ sql, params });
  });

  it.each([
    ['owner = = 1', 'unsupported_sql'],
    ['nope = 1', 'invalid_request'],
    ['x = 1; DROP TABLE docs', 'unsupported_sql'],
    ['level = (SELECT 1)', 'unsupported_sql'],
    ['level = 1 UNION SELECT 1', 'unsupported_sql'],
    ['lower(owner) = 1', 'unsupported_sql'],
    ['auth.email() = owner', 'unsupported_sql'],
    ['other.owner = 1', 'invalid_request'],
    ['level::text = 1', 'unsupported_sql'],
    ["level->>'a' = 'b'", 'unsupported_sql'],
    ["meta->>'a b' = 'x'", 'unsupported_sql'],
    ['owner', 'unsupported_sql'],
    ['level = $1', 'unsupported_sql'],
    ["auth.jwt() = 'x'", 'unsupported_sql'],
    ["level + 1 = 2", 'unsupported_sql'],
    ['', 'unsupported_sql'],
  ])('%s is rejected (%s)', (src, code) => {
    expect(() => compilePolicy(src, rel)).toThrow(expect.objectContaining({ code }));
  });

  it('never copies literal text into the SQL', () => {
    const c = compilePolicy("owner = '); DROP TABLE docs; --'", rel);
    expect(c.sql).not.toContain('DROP');
    expect(c.params).toEqual([{ k: 'lit', v: '); DROP TABLE docs; --' }]);
  });
});

describe('bindPolicy', () => {
  const auth = (user: AuthContext['user'], role = 'authenticated'): AuthContext => ({
    projectId: 'p',
    keyId: 'k',
    scopes: new Set(),
    role,
    operator: null,
    user,
  });
  it('binds uid, role, jwt claims and literals', () => {
    const u = { id: 'u1', role: 'authenticated', sessionId: 's1', aal: 'aal1', claims: { tier: 'gold', n: 3, ok: true, o: { a: 1 } } };
    const params = [{ k: 'uid' }, { k: 'role' }, { k: 'jwt', claim: 'tier' }, { k: 'jwt', claim: 'n' }, { k: 'jwt', claim: 'ok' }, { k: 'jwt', claim: 'o' }, { k: 'jwt', claim: 'sub' }, { k: 'jwt', claim: 'none' }, { k: 'lit', v: 5 }] as const;
    expect(bindPolicy([...params], auth(u))).toEqual(['u1', 'authenticated', 'gold', 3, 'true', '{"a":1}', 'u1', null, 5]);
  });
  it('anon has a null uid', () => {
    expect(bindPolicy([{ k: 'uid' }, { k: 'role' }], auth(null, 'anon'))).toEqual([null, 'anon']);
  });
});
