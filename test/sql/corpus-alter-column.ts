import type { Entry } from './harness.js';

/**
 * The `alter column` family of the differential corpus (docs/sql.md "Changing a column"):
 * SET/DROP DEFAULT, SET/DROP NOT NULL and TYPE … USING after a table is made and filled, as
 * Supabase migrations write them — what later inserts get, converted values, and Postgres'
 * own refusals (NULLs under SET NOT NULL, values that do not convert, casts it will not
 * apply without USING, a key column, unknown names).
 */
const o = (sql: string): Entry => ({ sql, ordered: true });

export const alterColumnFamily: Array<string | Entry> = [
  `create table alt_items (id serial primary key, name text, qty text, price int, note text, made timestamptz, flag text)`,
  `insert into alt_items (name, qty, price, note, flag) values ('a', '3', 10, null, 'true'), ('b', '12', null, 'n', 'false'), (null, '7', 30, null, null)`,
  `alter table alt_items alter column note set default 'none'`,
  `alter table alt_items alter made set default now()`,
  `alter table alt_items alter column price set default 1 + 1`,
  `insert into alt_items (name, qty) values ('c', '1')`,
  o(`select name, note, price, made is not null as stamped from alt_items order by id`),
  `alter table alt_items alter column note drop default`,
  `insert into alt_items (name, qty) values ('d', '2')`,
  o(`select name, note from alt_items order by id`),
  `alter table alt_items alter column name set not null`,
  `update alt_items set name = 'z' where name is null`,
  `alter table alt_items alter column name set not null`,
  `insert into alt_items (name, qty) values (null, '1')`,
  `alter table alt_items alter column name drop not null`,
  `insert into alt_items (name, qty) values (null, '5')`,
  `alter table alt_items alter column id drop not null`,
  `alter table alt_items alter column qty type int`,
  `alter table alt_items alter column qty type int using qty::int`,
  o(`select qty + 1 as next from alt_items order by id`),
  `alter table alt_items alter column flag type boolean using flag::boolean`,
  o(`select name, flag from alt_items where flag order by id`),
  `alter table alt_items alter column flag type text`,
  o(`select flag from alt_items order by id`),
  `alter table alt_items alter column made type date`,
  o(`select made is null as unset from alt_items order by id`),
  `alter table alt_items alter column price type bigint`,
  `alter table alt_items alter column price type numeric`,
  `alter table alt_items alter column price type numeric(4, 1) using price * 0.33`,
  o(`select price from alt_items where price is not null order by price`),
  `alter table alt_items alter column price type numeric(2, 1)`,
  `alter table alt_items alter column price type text`,
  o(`select price from alt_items order by id`),
  `alter table alt_items alter column name type int using name::int`,
  `alter table alt_items alter column qty type bigint using qty::text`,
  `alter table alt_items alter column missing set default 1`,
  `alter table alt_missing alter column x set default 1`,
  `alter table alt_items alter column name type varchar(1)`,
  `alter table alt_items alter column name type varchar(5)`,
  `insert into alt_items (name, qty) values ('toolong', 1)`,
  // note: not the ids: Postgres' sequence advanced on the refused insert above (docs/sql.md "Known differences").
  o(`select count(*) as n from alt_items`),
  `insert into alt_items (name, qty) values ('e', 9) returning note, price`,
  // note: a table other tables reference (with no ON DELETE action): their rows keep their parents.
  `create table alt_parent (id int primary key, name text)`,
  `create table alt_child (id int primary key, parent_id int references alt_parent (id))`,
  `insert into alt_parent values (1, 'p'), (2, 'q')`,
  `insert into alt_child values (10, 1), (11, 2)`,
  `alter table alt_parent alter column name set not null`,
  `alter table alt_parent alter column name type varchar(10)`,
  `delete from alt_parent where id = 1`,
  o(`select c.id, p.name from alt_child c join alt_parent p on p.id = c.parent_id order by c.id`),
  // note: a quoted default is converted to the column's type when the DDL runs, as Postgres folds it (22P02, 22003).
  `create table alt_defaults (id int primary key, n int default 'abc')`,
  `create table alt_defaults (id int primary key, n int default '99999999999')`,
  `create table alt_defaults (id int primary key, n int default ' 42 ', big bigint default '-9000000000', f float8 default '1.5', b boolean default 'yes', u uuid default 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11')`,
  `insert into alt_defaults (id) values (1)`,
  o(`select n, big, f, b, u from alt_defaults`),
  `alter table alt_defaults alter column n set default 'abc'`,
  `alter table alt_defaults alter column f set default 'x'`,
  `alter table alt_defaults alter column b set default 'maybe'`,
  `alter table alt_defaults alter column u set default 'not-a-uuid'`,
  `alter table alt_defaults alter column n set default '7'`,
  `insert into alt_defaults (id) values (2)`,
  o(`select id, n from alt_defaults order by id`),
];
