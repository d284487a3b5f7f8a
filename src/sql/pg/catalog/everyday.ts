import type { PgType } from '../types.js';
import type { Arg, CatalogFunction, Emitted } from './types.js';

/**
 * Placeholder for the everyday functions and operators of issue 17 item 4 (written apart, by
 * another change): the emitter looks functions up in CORE merged with EVERYDAY (EVERYDAY wins)
 * and asks operatorFor for the operators in OPERATORS, so that change is this file's swap.
 */
export const EVERYDAY: Record<string, CatalogFunction> = {};

/** An operator of the catalog: the types its operands are coerced to, and its SQLite. */
export interface CatalogOperator {
  args: readonly [PgType | null, PgType | null];
  registered?: boolean;
  emit(l: Arg, r: Arg): Emitted;
}

/** The operators this catalog answers for (the emitter asks operatorFor only for these). */
export const OPERATORS: ReadonlySet<string> = new Set();

export function operatorFor(_op: string, _l: PgType | null, _r: PgType | null): CatalogOperator | null {
  return null;
}
