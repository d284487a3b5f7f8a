import type { PgType } from '../types.js';

/**
 * The function catalog's shape (issue 17, item 2): a Postgres function name → how many
 * arguments it takes, which type each argument is coerced to, and how its SQLite is emitted
 * from the already-emitted arguments. The emitter (src/sql/pg/) resolves the call, emits and
 * coerces the arguments, checks the arity and calls `emit`; nothing here sees the syntax tree.
 */
export interface Arg {
  /** The argument's emitted SQLite. */
  sql: string;
  /** Its Postgres type after coercion (`unknown`: an untyped literal or parameter). */
  type: PgType | null;
}

export interface Emitted {
  sql: string;
  type: PgType | null;
}

export interface CatalogFunction {
  /** Accepted argument counts, inclusive (`Infinity` for variadic). */
  arity: readonly [min: number, max: number];
  /**
   * The type each argument is coerced to before `emit` (by position; the last entry repeats
   * for further arguments); null leaves an argument as it is. Postgres resolves an untyped
   * literal or parameter from the function's signature: this is that signature.
   */
  args?: readonly (PgType | null)[];
  /**
   * True when `emit` calls functions registered on the worker connections
   * (src/sql/functions*.ts): such a call cannot appear in DDL (defaults, checks), which runs
   * on connections without them.
   */
  registered?: boolean;
  /** In DDL (no registered functions there), the plain-SQLite form, where one exists. */
  native?(args: readonly Arg[]): Emitted;
  /** The call's SQLite from its arguments; throws EdgeError for bad constant arguments. */
  emit(args: readonly Arg[]): Emitted;
}

export type Catalog = Readonly<Record<string, CatalogFunction>>;
