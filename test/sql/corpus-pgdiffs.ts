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
  `select sum('1')`,
  `select concat(1) as c`,
];
