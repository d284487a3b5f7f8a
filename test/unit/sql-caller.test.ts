import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { callerDefaultText, registerCaller, withCaller, type CallerSlot } from '../../src/sql/caller.js';
import { registerFunctions } from '../../src/sql/functions.js';

// The caller slot behind `default auth.uid()` (src/sql/caller.ts), on a plain connection.
describe('the caller slot', () => {
  const slot: CallerSlot = { current: null };
  const db = new Database(':memory:');
  registerFunctions(db, { at: Number.POSITIVE_INFINITY, n: 0 });
  registerCaller(db, slot);
  db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, who TEXT DEFAULT (pe_caller_uid()), role TEXT DEFAULT (pe_caller_role()), email TEXT DEFAULT (pe_jgett(pe_caller_jwt(), 'email')), n INTEGER CHECK (n > 0))`);
  const ins = db.prepare('INSERT INTO t (n) VALUES (?) RETURNING who, role, email');
  const alice = { uid: 'a1', role: 'authenticated', jwt: '{"email":"alice@example.com"}' };

  it('fills a default with the caller set around the write, NULL outside', () => {
    expect(withCaller(slot, alice, () => ins.get(1))).toEqual({ who: 'a1', role: 'authenticated', email: 'alice@example.com' });
    expect(ins.get(1)).toEqual({ who: null, role: null, email: null });
  });

  it('is back to the previous caller after a write that throws, and nests', () => {
    expect(() => withCaller(slot, alice, () => ins.get(0))).toThrow(/CHECK constraint failed/);
    expect(slot.current).toBeNull();
    const bob = { uid: 'b2', role: 'authenticated', jwt: null };
    withCaller(slot, alice, () => {
      expect(withCaller(slot, bob, () => ins.get(1))).toMatchObject({ who: 'b2', email: null });
      expect(ins.get(1)).toMatchObject({ who: 'a1' });
    });
    expect(slot.current).toBeNull();
  });
});

describe('callerDefaultText', () => {
  it('shows a stored caller default as written, and nothing for other defaults', () => {
    expect(callerDefaultText('(pe_caller_uid())')).toBe('auth.uid()');
    expect(callerDefaultText('(pe_caller_role())')).toBe('auth.role()');
    expect(callerDefaultText("(pe_jgett(pe_caller_jwt(), 'email'))")).toBe("(auth.jwt() ->> 'email')");
    expect(callerDefaultText("(pe_jgett(pe_jget(pe_caller_jwt(), 'app_metadata'), 'org'))")).toBe("(auth.jwt() -> 'app_metadata' ->> 'org')");
    expect(callerDefaultText('(CAST(pe_caller_uid() AS TEXT))')).toBe('auth.uid()::text');
    expect(callerDefaultText("('EUR')")).toBeNull();
  });
});
