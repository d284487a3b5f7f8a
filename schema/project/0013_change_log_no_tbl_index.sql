-- The change log's (tbl, seq) index (0001, 0004) served no query: every read of the log goes
-- by seq, the rowid (src/events/change-store.ts; EXPLAIN QUERY PLAN in
-- bench/change-log-cost.mjs), and keeping it up cost every committed change a second b-tree
-- insert (docs/benchmarks.md "Change log cost").
DROP INDEX IF EXISTS "_svc_meta.change_log_tbl";
