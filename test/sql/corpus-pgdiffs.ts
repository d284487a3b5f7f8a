import type { Entry } from './harness.js';

/**
 * Differences from Postgres found late in issue 17 (docs/sql.md "Late differences"): enum
 * order through aliases, positions, min/max, greatest/least and DISTINCT ON; concat() and
 * aggregates of an untyped NULL; numeric display; and the reporting queries Supabase users
 * write (date_trunc group-bys, FILTER, window frames, percentiles, coalesce/nullif chains,
 * CASE forms, string_agg with order, DISTINCT ON, EXISTS, interval arithmetic, to_char).
 */
const o = (sql: string, params?: unknown[]): Entry => ({ sql, ordered: true, params });

export const pgDiffs: Array<string | Entry> = [
  // ---- enums: declaration order wherever Postgres compares them
  `create type pd_mood as enum ('sad', 'ok', 'happy', 'abc')`,
  `create table pd_people (id int primary key, name text not null, mood pd_mood, team text)`,
  `insert into pd_people values (1, 'ann', 'happy', 'red'), (2, 'bo', 'sad', 'red'), (3, 'cy', 'ok', 'blue'), (4, 'di', 'abc', 'blue'), (5, 'ed', null, 'blue'), (6, 'flo', 'ok', null)`,
  o(`select mood as m from pd_people order by m, id`),
  o(`select mood from pd_people order by 1, id`),
  o(`select mood as m, name from pd_people order by m desc, name`),
  o(`select name, mood from pd_people order by 2 desc nulls last, 1`),
  o(`select distinct mood from pd_people order by 1`),
  o(`select min(mood) as lo, max(mood) as hi from pd_people`),
  o(`select team, min(mood) as lo, max(mood) as hi from pd_people group by team order by team nulls last`),
  o(`select max(mood) as hi from pd_people where id > 100`),
  o(`select team, max(mood) from pd_people group by team having max(mood) > 'ok' order by team`),
  o(`select greatest('ok'::pd_mood, 'abc'::pd_mood, 'sad'::pd_mood) as g, least('ok'::pd_mood, 'abc'::pd_mood, 'sad'::pd_mood) as l`),
  o(`select name, greatest(mood, 'ok'::pd_mood) as g, least(mood, 'ok') as l from pd_people order by id`),
  o(`select distinct on (team) team, name, mood from pd_people order by team, mood desc`),
  o(`select distinct on (mood) mood, name from pd_people order by mood, name`),
  o(`select name, mood, rank() over (order by mood) as r from pd_people order by id`),
  o(`select m from (select mood as m from pd_people) s order by m nulls first`),
  o(`with t as (select mood from pd_people) select mood from t order by mood desc nulls last`),
  o(`select mood::text as t from pd_people order by t nulls last`),
  o(`select mood from pd_people where mood between 'sad' and 'happy' order by mood`),
  `select min(mood) from pd_people where mood = 'nope'`,
  `select greatest('ok'::pd_mood, 'nope')`,

  // ---- concat(), aggregates of an untyped NULL, case mapping
  `select concat()`,
  `select concat(null) as c, concat('a', null, 1) as d, concat_ws(',', null) as e`,
  `select sum(null)`,
  `select avg(null)`,
  `select sum(null::int) as s, avg(null::numeric) as a, max(null) as m, count(null) as c`,
  `select upper('straße') as u, lower('ÀÉÎ') as l, initcap('élan vital') as i`,
  `select upper('ß') as u, lower('İ') as l`,
  `select upper('ᾳ ⓐ ǅ') as u, lower('Ⓐ ǅ ΑΣ') as l, upper(null) as n`,
  `select name from pd_people where upper(name) = 'ANN'`,
  `select mood, count(*) as n from pd_people group by mood order by mood nulls first`,
  o(`select mood, count(*) as n from pd_people group by 1 order by 1`),
  o(`select name, mood from pd_people order by mood::text desc nulls last, name`),
  o(`select name, max(mood) over (partition by team) as top from pd_people order by id`),
  o(`select mood from pd_people union select 'ok'::pd_mood order by 1`),
  o(`select mood as m, name from pd_people where id < 4 union all select mood, name from pd_people where id >= 4 order by m desc nulls last, name limit 4`),
  o(`select mood, name from pd_people union select 'abc', 'zed' order by mood, 2 offset 1`),
  o(`select name from pd_people union select team from pd_people where team is not null order by 1`),
  `select mode() within group (order by mood) as m, percentile_disc(0.5) within group (order by mood) as p, percentile_disc(0.9) within group (order by mood desc) as d from pd_people`,
  o(`select team, mode() within group (order by mood) as m from pd_people group by team order by team nulls last`),
  `select percentile_cont(0.5) within group (order by mood) from pd_people`,
  `select sum('1')`,
  `select concat(1) as c`,

  // ---- numeric (binary floating point here: docs/sql.md "Late differences" lists what still differs)
  `create table pd_prices (id int primary key, price numeric(12,2), rate numeric, qty int)`,
  `insert into pd_prices values (1, 10.10, 0.1, 3), (2, 20.2, 0.2, 1), (3, 0.75, 1.25, 2), (4, 99999999.99, null, 5), (5, null, 0.3, null)`,
  `select 12345678901234567890::numeric + 1 as a, 12345678901234567890 * 2 as b`,
  `select 1::numeric / 3 as a, 2::numeric / 3 as b, 10::numeric / 4 as c, 1.0 / 3 as d, 7 / 2.0 as e`,
  `select 2::numeric ^ 0.5 as a, sqrt(2::numeric) as b, power(2::numeric, 64) as c`,
  `select 0.1 + 0.2 as a, 0.1::numeric * 3 as b, 1.1 - 1 as c`,
  `select sum(price) as s, avg(price) as a, sum(rate) as r, avg(qty) as q, sum(price * qty) as total from pd_prices`,
  o(`select id, round(price * 1.075, 2) as with_tax, round(rate, 1) as r1, price / qty as unit from pd_prices order by id`),
  `select round(2.5) as a, round(-2.5) as b, round(0.125, 2) as c, round(1.005, 2) as d, round(2.5::float8) as e`,
  `select 1.10::numeric(10,2) as a, 5::numeric(10,2) as b, 123.456::numeric(5,2) as c, (1::numeric / 3)::numeric(10,4) as d`,
  `select 1234.5::numeric(5,2)`,
  `select 10::numeric % 3 as a, mod(10.5, 3) as b, -10.5 % 3 as c, 7.25 % 2 as d, null::numeric % 2 as e`,
  o(`select id, price % 1 as cents from pd_prices order by id`),
  `select 5.5 % 0`,
  `select 1.5::float8 % 1`,
  `select trunc(2.789, 1) as a, ceil(2.1::numeric) as b, floor(-2.1::numeric) as c, abs(-1.50) as d`,
  // a numeric column holding whole numbers (stored as SQLite integers) divides as numeric, not as integers
  `create table pd_whole (id int primary key, price numeric, amt numeric(12,2), n int, f float8)`,
  `insert into pd_whole values (1, 10, 10, 10, 9), (2, 7, 3, 4, 2), (3, -7, -3, 2, -1), (4, null, 5, null, 4)`,
  o(`select id, price / 3 as a, amt / 4 as b, price / n as c, n / 4 as d, f / 2 as e, price / amt as g from pd_whole order by id`),
  o(`select id, price / 0.5 as a, 1 / price as b, (price + 1) / 2 as c from pd_whole where price is not null order by id`),
  `select sum(price) / 4 as a, sum(amt) / count(*) as b, max(price) / min(n) as c from pd_whole`,
  `select price / 0 from pd_whole where id = 1`,
];
