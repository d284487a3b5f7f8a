import { createRequire } from 'node:module';

export interface SqlParser {
  astify(sql: string, opt: object): unknown;
}

const require = createRequire(import.meta.url);
const parsers = new Map<string, SqlParser>();

/**
 * node-sql-parser for one dialect, loaded on first use: importing it eagerly costs
 * about 100 ms and 12 MB at startup, and `serve` must be ready in well under that.
 * (Loaded with require: it is CommonJS, and ESM-importing it makes Node pre-scan it.)
 */
export function sqlParser(dialect: 'postgresql' | 'mysql'): SqlParser {
  let p = parsers.get(dialect);
  if (!p) {
    const { Parser } = require(`node-sql-parser/build/${dialect}.js`) as { Parser: new () => SqlParser };
    parsers.set(dialect, (p = new Parser()));
  }
  return p;
}
