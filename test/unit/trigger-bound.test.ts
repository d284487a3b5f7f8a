import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { applyRecursion, MAIN_TRIGGER_MS, recursionSafe, registerTriggerBound } from '../../src/sql/trigger-bound.js';

// The bound on trigger work and the gate on recursive triggers (src/sql/trigger-bound.ts), on a plain connection.
describe('recursive triggers on a project file', () => {
  it('stay off while a compiled trigger lacks pe_trg_step() (compiled before the bound), on once none does', () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, {});
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

  it('on the main thread, a write whose triggers run past MAIN_TRIGGER_MS fails whole (statement_timeout); the next write starts its own clock', async () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, {});
    db.exec(`CREATE TABLE w (id INTEGER PRIMARY KEY, d INT)`);
    db.exec(`CREATE TRIGGER pe_trg_w_x_insert AFTER INSERT ON w WHEN new.d < 30 BEGIN SELECT pe_trg_step(); INSERT INTO w (d) VALUES (new.d + 1); INSERT INTO w (d) VALUES (new.d + 1); END`);
    applyRecursion(db);
    let err: unknown;
    try {
      db.exec(`INSERT INTO w (d) VALUES (0)`);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'statement_timeout', message: `the triggers of this write ran longer than ${MAIN_TRIGGER_MS} ms and were cancelled (the write is rolled back)` });
    expect(db.prepare('SELECT count(*) FROM w').pluck().get()).toBe(0);
    await Promise.resolve();
    db.exec(`INSERT INTO w (d) VALUES (20)`);
    expect(db.prepare('SELECT count(*) FROM w').pluck().get()).toBe(2 ** 11 - 1);
  });

  it('counts no firings: one statement firing a trigger for each of 50,000 rows is ordinary work', () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, {});
    db.exec(`CREATE TABLE b (id INTEGER PRIMARY KEY, x INT, n INT)`);
    db.exec(`CREATE TRIGGER pe_trg_b_double_insert AFTER INSERT ON b BEGIN SELECT pe_trg_step(); UPDATE b SET n = new.x * 2 WHERE id = new.id; END`);
    applyRecursion(db);
    db.exec(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000) INSERT INTO b (x) SELECT x FROM c`);
    expect(db.prepare('SELECT count(*), sum(n) FROM b').raw().get()).toEqual([50000, 50000 * 50001]);
  });

  it('on a SQL worker, a runaway trigger ends at the statement\'s time limit', () => {
    const db = new Database(':memory:');
    registerTriggerBound(db, { deadline: { at: Date.now() - 1 } });
    db.exec(`CREATE TABLE w (id INTEGER PRIMARY KEY, d INT)`);
    db.exec(`CREATE TRIGGER pe_trg_w_x_insert AFTER INSERT ON w WHEN new.d < 600 BEGIN SELECT pe_trg_step(); INSERT INTO w (d) VALUES (new.d + 1); END`);
    applyRecursion(db);
    expect(() => db.exec(`INSERT INTO w (d) VALUES (0)`)).toThrow('pe_statement_timeout');
  });
});
