import { EdgeError, conflict, invalidField } from '../core/errors.js';
import { argon2 } from './argon2.js';
import type { ControlStore } from './control-store.js';

export const OPERATOR_SESSION_MS = 7 * 24 * 3600_000;
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,255}$/;
// note: verified against when the e-mail is unknown, so both paths cost one argon2 verify.
let dummyHash: Promise<string> | null = null;

/** Operator (dashboard) accounts and their `lcd_` sessions. */
export class Operators {
  readonly #store: ControlStore;
  readonly #onChange: () => void;

  constructor(store: ControlStore, onChange: () => void = () => {}) {
    this.#store = store;
    this.#onChange = onChange;
  }

  static normalizeEmail(email: string): string {
    const e = email.trim().toLowerCase();
    if (!EMAIL.test(e)) throw invalidField('email', 'is not a valid e-mail address');
    return e;
  }

  async create(email: string, password: string | null): Promise<{ id: string; email: string }> {
    const e = Operators.normalizeEmail(email);
    if (password !== null && (password.length < 8 || password.length > 256)) {
      throw invalidField('password', 'must be 8 to 256 characters');
    }
    if (this.#store.findOperator(e)) throw conflict(`operator ${e} already exists`);
    const op = this.#store.createOperator(e, password === null ? null : await (await argon2()).hash(password));
    return { id: op.id, email: op.email };
  }

  /** Issues a session without a password: for the CLI, whose caller owns the data folder. */
  issue(email: string): { token: string; expires_at: string } {
    const op = this.#store.findOperator(Operators.normalizeEmail(email));
    if (!op) throw new EdgeError('not_found', `no operator ${email}`);
    const s = this.#store.createOperatorSession(op.id, OPERATOR_SESSION_MS);
    this.#onChange();
    return s;
  }

  async login(email: string, password: string): Promise<{ token: string; expires_at: string }> {
    const op = this.#store.findOperator(email.trim().toLowerCase());
    const { hash, verify } = await argon2();
    dummyHash ??= hash('not-a-real-password-0000');
    const ok = await verify(op?.password_hash ?? (await dummyHash), password).catch(() => false);
    if (!op || !op.password_hash || !ok) throw new EdgeError('invalid_credentials', 'invalid e-mail or password');
    const s = this.#store.createOperatorSession(op.id, OPERATOR_SESSION_MS);
    this.#onChange();
    return s;
  }
}
