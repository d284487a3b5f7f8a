import type { Entry } from './harness.js';

/**
 * The `lateral` family of the differential corpus (issue 17 item 4, "LATERAL where SQLite can
 * correlate it"): LATERAL subqueries of the shapes Supabase users write (one row per outer
 * row, top-N per group, LEFT JOIN … ON true, CROSS JOIN LATERAL), generate_series over an
 * earlier item, and set-returning functions in the select list — positives, NULLs, empty
 * groups and Postgres' own refusals (src/sql/pg/lateral.ts).
 */
const o = (sql: string, params?: unknown[]): Entry => ({ sql, ordered: true, params });
const u = (sql: string): Entry => ({ sql, unsupported: true });

export const lateralFamily: Array<string | Entry> = [
  `create table lat_authors (id int primary key, name text not null, quota int)`,
  `create table lat_posts (id int primary key, author_id int references lat_authors (id), title text not null, score int, price numeric(10,2), body jsonb, posted_at timestamptz, draft boolean not null default false, tags text[])`,
  `insert into lat_authors (id, name, quota) values (1, 'ann', 2), (2, 'bo', 0), (3, 'cy', null), (4, 'di', 3)`,
  `insert into lat_posts (id, author_id, title, score, price, body, posted_at, draft, tags) values
    (1, 1, 'a1', 5, 1.50, '{"items": [1, "x", null], "k": {"n": 1}}', '2024-01-01T10:00:00Z', false, '{red,blue}'),
    (2, 1, 'a2', 9, 2.25, '{"items": []}', '2024-01-03T10:00:00Z', true, '{}'),
    (3, 1, 'a3', 7, null, null, '2024-01-02T10:00:00Z', false, null),
    (4, 2, 'b1', 3, 10, '{"items": [true]}', '2024-02-01T10:00:00Z', false, '{green}'),
    (5, 4, 'd1', null, 0.10, '{"b": 2, "a": 1}', null, false, '{x,y,z}'),
    (6, 4, 'd2', null, 0.20, '"s"', '2024-03-01T10:00:00Z', true, '{x}')`,

  // ---- one row per outer row: aggregates without GROUP BY (an empty group is one row too)
  o(`select a.name, s.n, s.total, s.best from lat_authors a, lateral (select count(*) as n, sum(score) as total, max(score) as best from lat_posts p where p.author_id = a.id) s order by a.id`),
  o(`select a.name, s.* from lat_authors a cross join lateral (select count(*) filter (where p.draft) as drafts, avg(p.price) as avg_price from lat_posts p where p.author_id = a.id) s order by a.id`),
  o(`select a.name, s.titles from lat_authors a left join lateral (select string_agg(title, ',' order by title) as titles from lat_posts p where p.author_id = a.id) s on true order by a.id`),
  o(`select a.name, j.posts from lat_authors a, lateral (select coalesce(jsonb_agg(p.title order by p.id), '[]'::jsonb) as posts from lat_posts p where p.author_id = a.id) j order by a.id`),

  // ---- LIMIT 1: an inner join drops the outer row that finds nothing, a LEFT JOIN pads it
  o(`select a.name, p.title from lat_authors a cross join lateral (select title from lat_posts p where p.author_id = a.id order by posted_at desc nulls last limit 1) p order by a.id`),
  o(`select a.name, p.title, p.posted_at from lat_authors a left join lateral (select title, posted_at from lat_posts p where p.author_id = a.id order by posted_at desc nulls last limit 1) p on true order by a.id`),
  o(`select a.name, p.title from lat_authors a join lateral (select title from lat_posts p where p.author_id = a.id and not p.draft order by id limit 1) p on true order by a.id`),
  o(`select a.name, l.title from lat_authors a, lateral (select title from lat_posts where author_id = a.id order by score desc nulls last limit 1) as l order by a.name`),

  // ---- top-N per group, with the ON condition and column aliases
  o(`select a.name, t.title, t.score from lat_authors a join lateral (select title, score from lat_posts p where p.author_id = a.id order by score desc nulls last, id limit 2) t on true order by a.id, t.score desc nulls last, t.title`),
  o(`select a.name, t.title from lat_authors a left join lateral (select title, score from lat_posts p where p.author_id = a.id order by id limit 2) t on t.score > 4 order by a.id, t.title`),
  o(`select a.name, t.x, t.y from lat_authors a, lateral (select title, score from lat_posts p where p.author_id = a.id order by id limit 2) as t(x, y) order by a.id, t.x`),
  o(`select a.name, t.title from lat_authors a, lateral (select title from lat_posts p where p.author_id = a.id order by id offset 1) t order by a.id, t.title`),
  o(`select a.name, count(t.title) as n from lat_authors a left join lateral (select title from lat_posts p where p.author_id = a.id order by id limit 2) t on true group by a.id, a.name order by a.id`),
  o(`select a.name, t.title from lat_authors a, lateral (select title from lat_posts p where p.author_id = a.id order by id) t where t.title like '%2' order by a.id`),

  // ---- a LIMIT / OFFSET over the outer row (a NULL LIMIT is none)
  o(`select a.name, t.title from lat_authors a, lateral (select title from lat_posts p where p.author_id = a.id order by id desc limit a.quota) t order by a.id, t.title`),
  o(`select a.name, t.title from lat_authors a left join lateral (select p.title as title from lat_posts p where p.author_id = a.id order by title limit a.quota offset a.quota - 2) t on true order by a.id, t.title`),
  o(`select a.name, t.n from lat_authors a, lateral (select count(*) as n from lat_posts p where p.author_id = a.id limit a.quota) t order by a.id`),
  `select a.name from lat_authors a, lateral (select title from lat_posts p order by id limit a.quota - 5) t`,
  o(`select title from lat_posts order by score desc nulls last, id limit (select count(*) from lat_authors)`),
  `create type lat_mood as enum ('sad', 'ok', 'happy')`,
  `create table lat_moods (id int primary key, author_id int not null, mood lat_mood not null)`,
  `insert into lat_moods values (1, 1, 'happy'), (2, 1, 'sad'), (3, 1, 'ok'), (4, 4, 'ok')`,
  o(`select a.name, m.mood from lat_authors a, lateral (select mood from lat_moods m where m.author_id = a.id order by mood desc limit a.quota) m order by a.id, m.mood`),
  `drop table lat_moods`,
  `drop type lat_mood`,
  // ---- values keep their types through the lateral item (numeric, jsonb, boolean, timestamptz, text[], NULLs)
  o(`select l.* from lat_authors a, lateral (select p.price, p.body, p.draft, p.posted_at, p.tags, p.score from lat_posts p where p.author_id = a.id order by p.id) l order by a.id, l.posted_at nulls first`),
  o(`select a.id, l.k, l.total from lat_authors a, lateral (select p.body -> 'k' as k, p.price * 2 as total from lat_posts p where p.author_id = a.id and p.id in (1, 5)) l order by a.id`),
  o(`select a.name, l.flag from lat_authors a, lateral (select bool_or(draft) as flag from lat_posts p where p.author_id = a.id) l where l.flag order by a.name`),

  // ---- several earlier items, an outer query's column, parameters, a lateral without a reference
  o(`select a.name, p.title, l.n from lat_authors a join lat_posts p on p.author_id = a.id, lateral (select count(*) as n from lat_posts q where q.author_id = a.id and q.score > p.score) l order by p.id`),
  o(`select x.name, (select l.t from lateral (select max(title) as t from lat_posts p where p.author_id = x.id) l) as newest from lat_authors x order by x.id`),
  o(`select a.name, l.title from lat_authors a, lateral (select title from lat_posts p where p.author_id = a.id and p.score >= $1 order by id) l order by a.id, l.title`, [5]),
  o(`select a.name, l.one from lat_authors a, lateral (select 1 as one) l order by a.id`),
  o(`select a.name, g.n from lat_authors a, lateral (select generate_series(1, a.quota) as n) g order by a.id, g.n`),
  o(`with recent as (select * from lat_posts where posted_at > '2024-01-02') select a.name, r.title from lat_authors a, lateral (select title from recent where recent.author_id = a.id order by id limit 1) r order by a.id`),

  // ---- generate_series and friends over an earlier item (LATERAL written or not)
  o(`select a.name, g from lat_authors a, generate_series(1, a.quota) g order by a.id, g`),
  o(`select a.name, g.n from lat_authors a cross join lateral generate_series(a.quota, 1, -1) as g(n) order by a.id, g.n desc`),
  o(`select a.name, g from lat_authors a left join lateral generate_series(1, a.quota) g on true order by a.id, g`),
  o(`select p.id, t from lat_posts p, lateral unnest(p.tags) t order by p.id, t`),

  // ---- more shapes: over an implicitly lateral function, DISTINCT ON inside, in a CTE and a view, * beside a select-list function
  o(`select p.id, t, l.x from lat_posts p, unnest(p.tags) t, lateral (select upper(t) || '!' as x) l order by p.id, t`),
  o(`select a.name, l.title from lat_authors a, lateral (select distinct on (draft) title, draft from lat_posts p where p.author_id = a.id order by draft, id desc) l order by a.id, l.title`),
  o(`with best as (select a.id, l.score from lat_authors a, lateral (select max(score) as score from lat_posts p where p.author_id = a.id) l) select id, score from best order by id`),
  `create view lat_latest as select a.name, l.title from lat_authors a left join lateral (select title from lat_posts p where p.author_id = a.id order by id desc limit 1) l on true`,
  o(`select name, title from lat_latest order by name`),
  `drop view lat_latest`,
  o(`select *, unnest(tags) as t from lat_posts where id in (1, 4) order by id, t`),
  o(`select a.id, l.f, l.big from lat_authors a, lateral (select 0.1::float8 + 0.2::float8 as f, 2147483648::bigint * 1000 + a.id as big) l order by a.id`),
  o(`select a.name, l1.n, l2.m from lat_authors a, lateral (select count(*) as n from lat_posts p where p.author_id = a.id) l1, lateral (select l1.n * 10 + a.id as m) l2 order by a.id`),
  o(`select a.name, l.title from lat_authors a left join lateral (select title from lat_posts p where p.author_id = a.id and p.title = any (array['a2', 'd1'])) l on true where l.title is null order by a.id`),
  // ---- refused as Postgres refuses (42P10, 42P01, 42703) and errors inside the lateral item
  `select * from lat_authors a right join lateral (select a.id as x) l on true`,
  `select * from lat_authors a full join lateral (select title from lat_posts p where p.author_id = a.id) l on true`,
  o(`select a.name, l.title from lat_authors a full join lateral (select title, author_id from lat_posts where id = 4) l on l.author_id = a.id order by a.id`),
  `select * from lat_authors a, (select title from lat_posts p where p.author_id = a.id) l`,
  `select * from lat_authors a, lateral (select nope from lat_posts p where p.author_id = a.id) l`,
  `select * from lat_authors a, lateral (select 1 / (a.id - a.id) as z) l`,
  `select * from lat_authors a, lateral (select (select title from lat_posts p where p.author_id = a.id) as t) l`,

  // ---- set-returning functions in the select list (one: its FROM form; empty array or NULL: no row)
  o(`select id, unnest(tags) as tag from lat_posts order by id, tag`),
  o(`select generate_series(1, 3)`),
  o(`select generate_series(1, 3) as n order by n desc`),
  o(`select generate_series(3, 1) as n`),
  o(`select jsonb_array_elements(body -> 'items') as e from lat_posts where id = 1`),
  o(`select id, jsonb_array_elements_text(body -> 'items') as e from lat_posts where body ? 'items' order by id, e`),
  o(`select jsonb_object_keys(body) as k from lat_posts where jsonb_typeof(body) = 'object' order by k`),
  o(`select id, unnest(tags) from lat_posts where id > 1 order by 1, 2 limit 3`),
  o(`select distinct unnest(tags) as t from lat_posts order by t`),
  o(`select upper(unnest(tags)) as u, id from lat_posts where author_id = 4 order by u, id`),
  o(`select id, generate_series(1, author_id) as g from lat_posts order by id, g`),
  o(`select unnest(array['a', 'b']) as x`),
  o(`select unnest(tags)::text as t from lat_posts where id = 4`),
  o(`select count(*) as n from (select unnest(tags) from lat_posts) s`),
  `select unnest(tags) from lat_posts`,
  `select jsonb_array_elements('{"a": 1}'::jsonb)`,
  { sql: `select unnest($1::text[]) as tag order by tag desc`, params: [['a', 'c', 'b']], ordered: true },
  `create table lat_tags (id serial primary key, tag text not null)`,
  { sql: `insert into lat_tags (tag) select unnest($1::text[]) returning tag`, params: [['p', 'q']] },
  o(`insert into lat_tags (tag) select 'n' || generate_series(1, 2) returning id, tag`),
  o(`select tag from lat_tags order by id`),
  `drop table lat_tags`,
  // ---- grouped by the function itself: Postgres expands before grouping (the everyday tag count)
  o(`select unnest(tags) as tag, count(*) as n from lat_posts group by tag order by n desc, tag`),
  o(`select unnest(tags), count(*) as n from lat_posts group by 1 order by 1`),
  o(`select jsonb_object_keys(body) as k, count(*) as n from lat_posts where jsonb_typeof(body) = 'object' group by jsonb_object_keys(body) order by k`),
  o(`select unnest(tags) as tag, count(distinct author_id) as authors, max(score) as best from lat_posts group by tag having count(*) > 1 order by tag`),
  o(`select unnest(tags) as tag, author_id, count(*) as n from lat_posts group by tag, author_id order by tag, author_id`),
  // ---- several: zipped by ordinal, the shorter padded with NULLs (Postgres 10+)
  o(`select id, unnest(tags) as tag, generate_series(1, 2) as g from lat_posts order by id, g nulls last, tag`),
  o(`select unnest(array['a', 'b', 'c']) as x, unnest(array['p']) as y, generate_series(10, 11) as z`),
  o(`select generate_series(1, 2) as a, generate_series(1, 0) as b`),
  // ---- where Postgres refuses them (0A000)
  `select id from lat_posts where unnest(tags) = 'x'`,
  `select count(unnest(tags)) from lat_posts`,
  `select case when true then unnest(tags) end from lat_posts`,
  `select coalesce(unnest(tags), 'z') from lat_posts`,
  `select author_id from lat_posts group by author_id having unnest(array['a']) = 'a'`,
  `select * from lat_authors a join lat_posts p on unnest(p.tags) = 'x'`,
  `select sum(unnest(array['1'])::int) as s`,
  // ---- not translated, by name
  u(`select jsonb_each(body) from lat_posts`),
  u(`select unnest(array_agg(title)) from lat_posts`),
  u(`select author_id, unnest(array['x']) from lat_posts group by author_id`),
  u(`select count(*), generate_series(1, 2) from lat_posts`),
  `drop table lat_posts`,
  `drop table lat_authors`,
];
