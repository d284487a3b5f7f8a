import { describe, expect, it } from 'vitest';
import { withoutNotNull } from '../../src/sql/worker/relax-not-null.js';

// The CREATE TABLE text edit of src/sql/worker/relax-not-null.ts: only the named column's own NOT NULL goes.

describe('withoutNotNull', () => {
  it('drops the column\'s NOT NULL and renames the table, leaving CHECKs, other columns and STRICT alone', () => {
    const sql = `CREATE TABLE "posts" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "title" TEXT NOT NULL, "slug" TEXT NOT NULL CHECK ("slug" IS NOT NULL AND "slug" <> 'not null'), "n" INTEGER NOT NULL DEFAULT 0) STRICT`;
    expect(withoutNotNull(sql, 'slug', '_svc_rebuild')).toBe(
      `CREATE TABLE "_svc_rebuild" ("id" INTEGER PRIMARY KEY AUTOINCREMENT, "title" TEXT NOT NULL, "slug" TEXT  CHECK ("slug" IS NOT NULL AND "slug" <> 'not null'), "n" INTEGER NOT NULL DEFAULT 0) STRICT`,
    );
  });

  it('finds a column by its name, quoted or not, in any case; not a word inside another definition', () => {
    const sql = `CREATE TABLE t (a text default 'slug', "Slug" text not null, b text check (b <> 'x, slug'))`;
    expect(withoutNotNull(sql, 'slug', 'x')).toBe(`CREATE TABLE "x" (a text default 'slug', "Slug" text , b text check (b <> 'x, slug'))`);
    expect(withoutNotNull(sql, 'b', 'x')).toBeNull();
    expect(withoutNotNull(sql, 'missing', 'x')).toBeNull();
  });
});
