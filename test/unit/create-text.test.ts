import { describe, expect, it } from 'vitest';
import { editColumn } from '../../src/sql/worker/create-text.js';

// The column edit the table rebuild uses (src/sql/worker/create-text.ts): only the named column's own clauses change.
describe('editColumn', () => {
  const sql = `CREATE TABLE "t" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "a" TEXT NOT NULL DEFAULT ('x') CHECK (a <> 'NOT NULL'), "b" BOOLEAN CHECK ("b" IN (0, 1)) REFERENCES "p" ("id") ON DELETE SET NULL, "c" TEXT CONSTRAINT pe_varchar_3 CHECK (length("c") <= 3))`;

  it('sets and drops a default and a NOT NULL, leaving CHECKs and strings alone', () => {
    expect(editColumn(sql, 'a', 's', { default: null })).toBe(
      `CREATE TABLE "s" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "a" TEXT NOT NULL  CHECK (a <> 'NOT NULL'), "b" BOOLEAN CHECK ("b" IN (0, 1)) REFERENCES "p" ("id") ON DELETE SET NULL, "c" TEXT CONSTRAINT pe_varchar_3 CHECK (length("c") <= 3))`,
    );
    expect(editColumn(sql, 'a', 's', { notNull: false, default: 'now()' })).toContain(`"a" TEXT   CHECK (a <> 'NOT NULL') DEFAULT (now()),`);
    expect(editColumn(sql, 'b', 's', { notNull: true })).toContain(`REFERENCES "p" ("id") ON DELETE SET NULL NOT NULL,`);
  });

  it('changes a type, dropping the old type\'s own CHECKs only', () => {
    expect(editColumn(sql, 'b', 's', { type: { decl: 'INTEGER', checks: [] } })).toContain(`"b" INTEGER  REFERENCES "p" ("id") ON DELETE SET NULL,`);
    expect(editColumn(sql, 'c', 's', { type: { decl: 'JSONB', checks: ['CHECK (json_valid("c"))'] } })).toContain(`"c" JSONB  CHECK (json_valid("c")))`);
    expect(editColumn(sql, 'missing', 's', { notNull: true })).toBeNull();
  });
});
