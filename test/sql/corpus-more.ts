import type { Entry } from './harness.js';

/**
 * More of the differential corpus (issue 17 item 4 and "Bad input"), by family: the
 * mismatches the corpus found last, each with its NULLs and negatives. Run after
 * corpus-families.ts' statements (spread into corpus.ts' list).
 */
const o = (sql: string, params?: unknown[]): Entry => ({ sql, ordered: true, params });
const p = (sql: string, params: unknown[], ordered = false): Entry => ({ sql, params, ordered });

export const more: Array<string | Entry> = [
  // ---- integer ranges (22003) and casts
  `select 3000000000::int as n`,
  `select '3000000000'::int as n`,
  `select -2147483648::int as n, 2147483647::int as m`,
  `select (-2147483648)::int as n`,
  `select 2147483648::int as bad`,
  `select count(*)::int as n from books`,
  `select 'abc'::bigint as bad`,
  `select '12'::bigint + 1 as n`,
  `select '9223372036854775808'::bigint as bad`,
  `select $$12$$::int + 1 as n`,
  p(`select $1::int as n`, ['3000000000']),
  p(`select $1::int + 1 as n`, ['41']),
  `select 123.456::numeric(5,2) as n`,
  `select 12345.6::numeric(5,2) as bad`,

  // ---- numeric sums, differences and products are exact to 15 digits (float8 is not)
  `select 0.1 + 0.2 = 0.3 as a, 0.1::float8 + 0.2::float8 = 0.3::float8 as b, 0.3 - 0.1 = 0.2 as c, 1.1 * 3 = 3.3 as d`,
  `select 0.1 + 0.2 as s, 1.1 * 3 as p, null::numeric + 1 as n`,
  o(`select title, price * 2 as doubled, price + 0.01 as plus from books order by id`),
  `select sum(price) + 0.1 as s from books`,
  o(`select title from books where price + 0.01 = 1.00 order by id`),
  `select status, qty * 100 / sum(qty) over () as pct from orders`,

  // ---- jsonb ->> on arrays, timestamptz against date-only text, window shares
  `select '[1,2]'::jsonb ->> 0 as a, '[1,2]'::jsonb -> 1 as b, '[1,2]'::jsonb ->> 5 as c, '[1,2]'::jsonb ->> -1 as d`,
  `select '{"a":[1,2]}'::jsonb -> 'a' ->> 1 as a, '[{"x":"y"}]'::jsonb -> 0 ->> 'x' as b`,
  `select count(*) as n from orders where placed_at > '2024-02-01'`,
  `select count(*) as n from orders where placed_at >= '2024-02-01' and placed_at < '2024-03-01'`,
  o(`select status from orders where placed_at::date = '2024-03-01' order by status`),
  o(`select status, qty, qty * 100 / sum(qty) over () as pct, sum(qty) over () as total from orders order by placed_at`),

  // ---- scalar subqueries: more than one row is 21000
  `select (select id from books) as x`,
  `select (select id from books where id = 1) as x, (select id from books where id = -1) as y`,
  o(`select title, (select count(*) from orders o where o.book_id = b.id) as n from books b order by id`),
  o(`select title from books b where (select name from authors a where a.id = b.author_id) like 'A%' order by id`),
  `select title from books where id = (select book_id from orders)`,
  o(`select title, (select qty from orders o where o.book_id = b.id) as q from books b where id in (1, 3) order by id`),
  `select title, (select qty from orders o where o.book_id = b.id) as q from books b`,
  `select (select null::int) as n`,

  // ---- functions that do not exist for these types (42883)
  `select sum(title) from books`,
  `select avg(published_at) from books`,
  `select nosuchfn(1)`,
  `select nosuchfn()`,
  `select title from books where no_such_function(title) = 1`,

  // ---- concat, Unicode case
  `select concat('a', null, 1, true) as c, concat(false, 2.5) as d`,
  `select concat(null) as a, concat(null, null) as b`,
  `select lower('ÀBC') as l, upper('àbc') as u, length('héllo') as n, lower(null) as z`,
  `select upper('ñandú') as a, lower('ΣΑΣ') as b`,
  o(`select upper(title) as t from books order by id`),
  o(`select name from authors where lower(name) like '%a%' order by id`),

  // ---- error classes
  `select * from generate_series(1, 3, 0)`,
  `select * from jsonb_array_elements('{"a":1}'::jsonb)`,
  `select * from jsonb_array_elements('3'::jsonb)`,
  `select * from jsonb_each('[1]'::jsonb)`,
  `select 'a' ~ '(' as r`,
  `select 'a' ~* '[' as r`,
  `select x.id from books`,
  `select b.id from books a`,

  // ---- date ± integer
  `select current_date + 1 > current_date as a, date '2024-01-31' + 1 as d, date '2024-03-01' - 1 as e, 7 + date '2024-02-28' as f`,
  o(`select name, born + 30 as d from authors order by id`),
  `select date '2024-01-01' - null::int as d, null::date + 1 as e`,
  `select date '2024-12-31' + 365 as d`,

  // ---- text[] functions
  `select array_to_string(array['a','b',null], ',') as s, array_to_string(array['a',null], ',', '*') as t`,
  o(`select id, array_to_string(tags, '|') as s from books order by id`),
  `select array_to_string(null::text[], ',') as s`,
  `select string_to_array('a,b,,c', ',') as a, string_to_array('', ',') as b, string_to_array(null, ',') as c, string_to_array('a-x-b', '-', 'x') as d`,
  `select string_to_array('abc', null) as a`,
  `select array_append(array['a'], 'b') as a, array_prepend('z', array['a']) as b, array_cat(array['a'], array['b']) as c, array_remove(array['a','b','a'], 'a') as d, array_position(array['a','b'], 'b') as e`,
  `select array_position(array['a','b'], 'q') as a, array_append(null::text[], 'x') as b, array_remove(null::text[], 'a') as c`,
  o(`select id, array_append(tags, 'new') as t, array_position(tags, 'math') as pos from books order by id`),
  `select array[]::text[] as a, cardinality(array[]::text[]) as n`,
  `select array_length(string_to_array('x y z', ' '), 1) as n`,
  `select 'b' = any(string_to_array('a,b', ',')) as found`,

  // ---- jsonb ?| ?&, jsonb_object_agg, jsonb_pretty
  `select '{"a":1,"b":2}'::jsonb ?| array['a','z'] as a, '{"a":1,"b":2}'::jsonb ?& array['a','z'] as b, '{"a":1}'::jsonb ?& array['a'] as c`,
  `select '{"a":1}'::jsonb ?| array[]::text[] as a, '{"a":1}'::jsonb ?& array[]::text[] as b`,
  o(`select name from authors where meta ?| array['navy', 'langs'] order by id`),
  o(`select name from authors where meta ?& array['country', 'langs'] order by id`),
  `select jsonb_object_agg(k, v) as o from kv where k in ('a','b')`,
  `select jsonb_object_agg(k, v) as o from kv where false`,
  `select jsonb_object_agg(null::text, 1) as bad`,
  o(`select status, jsonb_object_agg(qty::text, status) is not null as ok from orders group by status order by status`),
  `select json_object_agg(name, born) as o from authors where id < 3`,
  `select jsonb_object_agg(kind, happened_at) filter (where kind <> 'error') as o from events where kind = 'logout'`,
  `select jsonb_pretty('{"a":[1,2]}'::jsonb) as p`,
  `select jsonb_pretty('[]'::jsonb) as p, jsonb_pretty('{}'::jsonb) as q, jsonb_pretty(null) as r`,
  `select jsonb_pretty('{"b":{"c":[]},"a":"x"}'::jsonb) as p`,
  o(`select k, jsonb_pretty(v) as p from kv order by k`),

  // ---- starts_with, translate, format, ascii, chr, ^
  `select starts_with('abc', 'ab') as a, starts_with('abc', 'b') as b, starts_with(null, 'a') as c, translate('abc', 'ab', 'xy') as t, translate('hello', 'lo', 'x') as u`,
  o(`select title from books where starts_with(title, 'Comp') order by id`),
  `select format('%s %I %L', 'x', 'my col', 'it''s') as f`,
  `select format('%s|%s', null, true) as a, format('%L', null) as b, format('%I', 'abc') as c, format('100%%') as d, format('%2$s %1$s', 'a', 'b') as e`,
  `select format('%s %s', 'a') as bad`,
  `select format(null) as f`,
  o(`select format('%s by %s', title, author_id) as f from books order by id`),
  `select ascii('A') as a, chr(66) as c, ascii('') as e, ascii('é') as f, ascii(null) as g, chr(null) as h`,
  `select chr(0) as bad`,
  `select 2 ^ 10 as p, 2.0 ^ 3 as q, 4 ^ 0.5 as r, null ^ 2 as s`,
  `select 2 ^ 3 ^ 2 as p`,

  // ---- subscripts of a function's or ARRAY[…]'s result
  `select (regexp_match('abc123', '([a-z]+)([0-9]+)'))[2] as m, (regexp_match('abc', 'x'))[1] as n`,
  `select (string_to_array('a,b,c', ','))[2] as m, ('{x,y}'::text[])[1] as n`,
  `select (array['a','b'])[3] as m, (array['a','b'])[1] as n`,
  o(`select title, (regexp_match(title, '^(\w+) (\w+)'))[2] as second from books order by id`),

  // ---- jsonb_object_keys as a FROM item
  `select * from jsonb_object_keys('{"a":1,"b":2}'::jsonb)`,
  o(`select k from jsonb_object_keys('{"b":1,"a":2}'::jsonb) as k order by k`),
  `select * from jsonb_object_keys('[1]'::jsonb)`,
  `select count(*) as n from kv, jsonb_object_keys('{"x":1}') j`,
  o(`select name, (select count(*) from jsonb_object_keys(a.meta)) as n from authors a order by id`),

  // ---- set-returning functions over an earlier FROM item (implicitly LATERAL)
  o(`select b.id, t from books b, unnest(b.tags) t order by b.id, t`),
  o(`select k, e from kv, jsonb_array_elements_text(v) e where k = 'f' order by e`),
  `select k, e.value from kv, jsonb_array_elements(kv.v) e where k = 'f'`,
  `select k, e.value from kv, jsonb_array_elements(kv.v) e where k = 'c'`,
  `select * from kv, jsonb_array_elements(kv.v) e`,
  o(`select a.name, m.key, m.value from authors a, jsonb_each(a.meta) m where a.id < 3 order by a.id, m.key`),
  o(`select a.name, m.key, m.value from authors a, jsonb_each_text(a.meta) m where a.id = 3 order by a.id, m.key`),
  o(`select a.name, k from authors a cross join jsonb_object_keys(a.meta) k order by a.id, k`),
  o(`select a.name, count(*) as n from authors a, jsonb_each_text(a.meta) m group by a.name order by a.name`),
  o(`select b.title, t.* from books b, unnest(b.tags) as t(tag) where b.id < 3 order by b.id, t.tag`),
  o(`select b.id, t from books b left join unnest(b.tags) t on true order by b.id, t`),
  o(`select t, count(*) as n from books b, unnest(b.tags) t group by t order by n desc, t`),
  o(`select b.title from books b where exists (select 1 from unnest(b.tags) t where t = 'math') order by b.id`),
  o(`select a.name, l from authors a, jsonb_array_elements_text(a.meta -> 'langs') l order by a.id, l`),

  // ---- VALUES in set operations; ON CONFLICT without a matching unique index (42P10)
  o(`values (1) union all values (2)`),
  o(`values (1, 'a') union values (1, 'a') union all select 2, 'b' order by 1`),
  `insert into kv (k, v) values ('z2', '1') on conflict (v) do nothing`,
  `insert into kv (k, v) values ('z2', '1') on conflict (k, v) do update set v = excluded.v`,
  `select count(*) as n from kv where k = 'z2'`,

  // ---- ON CONFLICT DO UPDATE proposing the same key twice (21000)
  `create table up2 (k text primary key, n int not null default 0)`,
  `insert into up2 (k, n) values ('a', 1), ('a', 2) on conflict (k) do update set n = excluded.n`,
  `select count(*) as n from up2`,
  o(`insert into up2 (k, n) values ('a', 1), ('b', 2) on conflict (k) do update set n = excluded.n returning k, n`),
  `insert into up2 (k, n) values ('a', 5), ('a', 6) on conflict (k) do update set n = excluded.n`,
  o(`insert into up2 (k, n) values ('c', 1), ('c', 2) on conflict (k) do nothing returning k, n`),
  p(`insert into up2 (k, n) values ($1, 1), ($1, 2) on conflict (k) do update set n = excluded.n`, ['d']),
  o(`select k, n from up2 order by k`),
  `drop table up2`,
];
