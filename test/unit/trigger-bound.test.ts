import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { applyRecursion, recursionSafe, registerTriggerBound } from '../../src/sql/trigger-bound.js';

// The bound on trigger work and the gate on recursive triggers (src/sql/trigger-bound.ts), on a plain connection.
describe('recursive triggers on a project file', () => {
  it('stay off while a compiled trigger lacks pe_trg_step() (compiled before the bound), on once none does', () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, { edge: true });
    db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, d INT)`);
    db.exec(`CREATE TRIGGER pe_trg_t_old_insert AFTER INSERT ON t WHEN new.d < 3 BEGIN INSERT INTO t (d) VALUES (new.d + 1); END`);
    db.exec(`CREATE TRIGGER pe_identity_insert_t BEFORE INSERT ON t WHEN 0 BEGIN SELECT 1; END`);
    expect(recursionSafe(db)).toBe(false);
    applyRecursion(db);
    expect(db.pragma('recursive_triggers', { simple: true })).toBe(0);
    db.exec(`INSERT INTO t (d) VALUES (0)`);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(2);
    db.exec(`DROP TRIGGER pe_trg_t_old_insert; DELETE FROM t`);
    db.exec(`CREATE TRIGGER pe_trg_t_new_insert AFTER INSERT ON t WHEN new.d < 3 BEGIN SELECT pe_trg_step(); INSERT INTO t (d) VALUES (new.d + 1); END`);
    expect(recursionSafe(db)).toBe(true);
    applyRecursion(db);
    expect(db.pragma('recursive_triggers', { simple: true })).toBe(1);
    db.exec(`INSERT INTO t (d) VALUES (0)`);
    expect(db.prepare('SELECT count(*) FROM t').pluck().get()).toBe(4);
  });

  it('a statement past the bound fails whole; the next statement, after the run, counts from zero', async () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, { edge: true });
    db.exec(`CREATE TABLE w (id INTEGER PRIMARY KEY, d INT)`);
    db.exec(`CREATE TRIGGER pe_trg_w_x_insert AFTER INSERT ON w WHEN new.d < 20 BEGIN SELECT pe_trg_step(); INSERT INTO w (d) VALUES (new.d + 1); INSERT INTO w (d) VALUES (new.d + 1); END`);
    applyRecursion(db);
    expect(() => db.exec(`INSERT INTO w (d) VALUES (0)`)).toThrow('trigger work limit exceeded: the statement fired triggers more than 10000 times');
    expect(db.prepare('SELECT count(*) FROM w').pluck().get()).toBe(0);
    await Promise.resolve();
    db.exec(`INSERT INTO w (d) VALUES (10)`);
    db.exec(`INSERT INTO w (d) VALUES (10)`);
    expect(db.prepare('SELECT count(*) FROM w').pluck().get()).toBe(2 * (2 ** 11 - 1));
  });

  it('on a SQL worker, a runaway trigger ends at the statement\'s time limit', () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, { edge: false, deadline: { at: Date.now() - 1 } });
    db.exec(`CREATE TABLE w (id INTEGER PRIMARY KEY, d INT)`);
    db.exec(`CREATE TRIGGER pe_trg_w_x_insert AFTER INSERT ON w WHEN new.d < 600 BEGIN SELECT pe_trg_step(); INSERT INTO w (d) VALUES (new.d + 1); END`);
    applyRecursion(db);
    expect(() => db.exec(`INSERT INTO w (d) VALUES (0)`)).toThrow('pe_statement_timeout');
  });
});
