import type { Entry } from './harness.js';

/**
 * Differential corpus: data-modifying statements in WITH (docs/sql.md "Data-modifying WITH"),
 * with NULLs and negatives. Only statements whose answer does not depend on Postgres' single
 * snapshot (the main query reads the items' rows through their RETURNING, never the tables).
 */
const o = (sql: string): Entry => ({ sql, ordered: true });

export const dmlCtes: Array<string | Entry> = [
  `create table dc_orgs (id serial primary key, name text not null unique)`,
  `create table dc_members (id serial primary key, org_id int not null references dc_orgs (id), who text)`,
  `with ins as (insert into dc_orgs (name) values ('a'), ('b') returning id, name) insert into dc_members (org_id, who) select id, name || '-owner' from ins returning who`,
  `with ins as (insert into dc_orgs (name) values ('c') returning id) select count(*) as n from ins`,
  `with d as (delete from dc_members where who = 'a-owner' returning *) select count(*) as n, min(who) as w from d`,
  o(`with u as (update dc_orgs set name = upper(name) where name in ('b', 'c') returning id, name) select name from u order by name`),
  `with a as (insert into dc_orgs (name) values ('d') returning id), b as (insert into dc_members (org_id, who) select id, 'd1' from a returning who) select (select count(*) from a) as x, (select who from b) as y`,
  `with u (n) as (update dc_orgs set name = name where false returning id) select count(*) as n from u`,
  `with ins as (insert into dc_members (org_id, who) select id, null from dc_orgs where name = 'd' returning who) select who, who is null as missing from ins`,
  `with gone as (delete from dc_members where who is null) select 1 as one`,
  `with src (n) as (values ('e'), ('f')) insert into dc_orgs (name) select n from src returning name`,
  `with t as (select 'e' as n) delete from dc_orgs where name in (select n from t) returning name`,
  `with t as (select 'f' as n) update dc_orgs set name = 'F' where name in (select n from t) returning name`,
  // negatives: each rolls back whole, as in Postgres
  `with ins as (insert into dc_orgs (name) values ('a') returning id) select id from ins`,
  `with ins as (insert into dc_members (org_id, who) values (999, 'x') returning id) select id from ins`,
  `with x as (insert into dc_orgs (name) values (null) returning id) select * from x`,
  `with ok as (insert into dc_orgs (name) values ('g') returning id) insert into dc_members (org_id, who) select id + 1000, 'bad' from ok`,
  `select * from (with x as (delete from dc_members returning id) select id from x) t`,
  `with x as (delete from dc_members returning id), x as (select 1) select 1`,
  `with x (a, b) as (delete from dc_members returning id) select * from x`,
  o(`select name from dc_orgs order by name`),
  o(`select o.name, m.who from dc_members m join dc_orgs o on o.id = m.org_id order by m.who`),
  `drop table dc_members`,
  `drop table dc_orgs`,
];
