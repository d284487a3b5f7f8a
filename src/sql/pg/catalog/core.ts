import type { Catalog, CatalogFunction, Emitted } from './types.js';
import type { PgType } from '../types.js';
import { EVERYDAY } from './everyday.js';
import { MORE } from './more.js';

/**
 * The emitter's own functions as catalog entries (src/sql/pg/catalog/types.ts). The ones
 * that need the syntax tree or the emitter's state (aggregates, auth.*, timezone(), the
 * JSON builders, EXISTS) stay in emit.ts.
 */
const fixed = (min: number, max: number, args: readonly (PgType | null)[], emit: CatalogFunction['emit']): CatalogFunction => ({ arity: [min, max], args, emit });
const r = (sql: string, type: PgType | null): Emitted => ({ sql, type });

export const CORE: Catalog = {
  lower: fixed(1, 1, ['text'], ([a]) => r(`lower(${a!.sql})`, 'text')),
  upper: fixed(1, 1, ['text'], ([a]) => r(`upper(${a!.sql})`, 'text')),
  length: fixed(1, 1, ['text'], ([a]) => r(`length(${a!.sql})`, 'int4')),
  char_length: fixed(1, 1, ['text'], ([a]) => r(`length(${a!.sql})`, 'int4')),
  character_length: fixed(1, 1, ['text'], ([a]) => r(`length(${a!.sql})`, 'int4')),
  octet_length: fixed(1, 1, ['text'], ([a]) => r(`length(CAST(${a!.sql} AS BLOB))`, 'int4')),
  replace: fixed(3, 3, ['text'], ([a, b, c]) => r(`replace(${a!.sql}, ${b!.sql}, ${c!.sql})`, 'text')),
};

/** Every catalog function by name: the everyday ones (and more.ts') win over the core ones of the same name. */
export const FUNCTIONS: Catalog = { ...CORE, ...EVERYDAY, ...MORE };
