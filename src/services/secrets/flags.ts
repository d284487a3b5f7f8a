import { EdgeError, invalidField } from '../../edge/errors.js';
import type { FlagRow } from './store.js';
import { inRollout } from './rollout.js';

/** A flag key: `[a-z0-9][a-z0-9_.-]{0,127}`; `evaluate` is reserved (it is an endpoint). */
const KEY = /^[a-z0-9][a-z0-9_.-]{0,127}$/;
/** Limits of a flag's `value` and `default`: JSON text in UTF-8 bytes, and nesting depth. */
export const FLAG_VALUE_MAX_BYTES = 8 * 1024;
export const FLAG_VALUE_MAX_DEPTH = 8;
export const FLAG_DESCRIPTION_MAX = 1024;
const FIELDS = new Set(['value', 'description', 'enabled', 'rollout', 'default']);

/** A flag as the API shows it. */
export interface Flag {
  key: string;
  value: unknown;
  default: unknown;
  enabled: boolean;
  rollout: number;
  description: string | null;
  updated_at: string;
}

export function checkFlagKey(key: string): void {
  if (!KEY.test(key)) throw invalidField('key', 'a flag key is 1 to 128 of a-z, 0-9, "_", "." and "-", starting with a letter or digit');
  if (key === 'evaluate') throw invalidField('key', '"evaluate" is reserved');
}

/** Validates a flag write (`PUT /secrets/flags/{key}`) and gives the row to store. */
export function flagRow(key: string, body: unknown, now: string): FlagRow {
  checkFlagKey(key);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new EdgeError('invalid_body', 'the body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const f of Object.keys(b)) if (!FIELDS.has(f)) throw invalidField('body', 'unknown field; a flag takes "value", "default", "enabled", "rollout" and "description"');
  if (!('value' in b) || b.value === undefined) throw invalidField('value', 'required');
  const value = jsonText('value', b.value);
  const enabled = b.enabled === undefined ? true : b.enabled;
  if (typeof enabled !== 'boolean') throw invalidField('enabled', 'must be true or false');
  const rollout = b.rollout === undefined ? 100 : b.rollout;
  if (typeof rollout !== 'number' || !Number.isInteger(rollout) || rollout < 0 || rollout > 100) {
    throw invalidField('rollout', 'must be a whole number from 0 to 100');
  }
  const description = b.description ?? null;
  if (description !== null && (typeof description !== 'string' || description.length > FLAG_DESCRIPTION_MAX)) {
    throw invalidField('description', `must be a string of at most ${FLAG_DESCRIPTION_MAX} characters, or null`);
  }
  const def = 'default' in b ? jsonText('default', b.default) : typeof b.value === 'boolean' ? 'false' : 'null';
  return { key, value, default_value: def, enabled: enabled ? 1 : 0, rollout, description, updated_at: now };
}

export function flagOf(r: FlagRow): Flag {
  return {
    key: r.key,
    value: JSON.parse(r.value) as unknown,
    default: JSON.parse(r.default_value) as unknown,
    enabled: r.enabled === 1,
    rollout: r.rollout,
    description: r.description,
    updated_at: r.updated_at,
  };
}

function jsonText(field: string, v: unknown): string {
  if (depthOf(v, 0) > FLAG_VALUE_MAX_DEPTH) throw invalidField(field, `nested more than ${FLAG_VALUE_MAX_DEPTH} levels deep`);
  const text = JSON.stringify(v);
  if (Buffer.byteLength(text, 'utf8') > FLAG_VALUE_MAX_BYTES) throw invalidField(field, `larger than ${FLAG_VALUE_MAX_BYTES} bytes of JSON`);
  return text;
}

/** Nesting depth: a scalar 0, `[]` or `{}` 1, `[[1]]` 2; stops counting past the limit. */
function depthOf(v: unknown, at: number): number {
  if (typeof v !== 'object' || v === null) return at;
  if (at >= FLAG_VALUE_MAX_DEPTH) return at + 1;
  let max = at + 1;
  for (const c of Array.isArray(v) ? v : Object.values(v)) {
    const d = depthOf(c, at + 1);
    if (d > max) max = d;
    if (max > FLAG_VALUE_MAX_DEPTH) break;
  }
  return max;
}

/** How evaluate treats one flag. */
interface Rule {
  readonly keyJson: string;
  readonly key: string;
  readonly value: string;
  readonly def: string;
  /** `on`: the value for everyone; `off`: the default for everyone; `rollout`: per user. */
  readonly mode: 'on' | 'off' | 'rollout';
  readonly rollout: number;
}

/** Per-user answers kept per project view (their JSON text), oldest dropped first. */
const USER_ANSWERS = 1024;

/**
 * The flags of one project ready to evaluate: built once per write (cached per project), so
 * an evaluation hashes only the flags under a partial rollout, and not even those for a user
 * seen since the last write. Answers are JSON text.
 */
export class FlagsView {
  readonly #rules: Rule[];
  /** The answer without a user (and for every user when no flag is under a partial rollout). */
  readonly #anonymous: string;
  readonly #partial: boolean;
  readonly #users = new Map<string, string>();

  constructor(rows: readonly FlagRow[]) {
    this.#rules = rows.map((r) => ({
      key: r.key,
      keyJson: JSON.stringify(r.key),
      value: r.value,
      def: r.default_value,
      mode: r.enabled !== 1 || r.rollout <= 0 ? 'off' : r.rollout >= 100 ? 'on' : 'rollout',
      rollout: r.rollout,
    }));
    this.#partial = this.#rules.some((r) => r.mode === 'rollout');
    this.#anonymous = this.#answer(null);
  }

  /** `{"flags":{key: value}}` for a user (or none). */
  evaluate(userId: string | null): string {
    if (userId === null || !this.#partial) return this.#anonymous;
    let a = this.#users.get(userId);
    if (a === undefined) {
      a = this.#answer(userId);
      if (this.#users.size >= USER_ANSWERS) this.#users.delete(this.#users.keys().next().value!);
      this.#users.set(userId, a);
    }
    return a;
  }

  #answer(userId: string | null): string {
    let out = '{"flags":{';
    for (let i = 0; i < this.#rules.length; i++) {
      const r = this.#rules[i]!;
      const on = r.mode === 'on' || (r.mode === 'rollout' && userId !== null && inRollout(r.key, userId, r.rollout));
      out += `${i === 0 ? '' : ','}${r.keyJson}:${on ? r.value : r.def}`;
    }
    return `${out}}}`;
  }
}
