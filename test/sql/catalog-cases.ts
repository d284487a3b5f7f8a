import type { Entry } from './harness.js';

/**
 * The function catalog's differential cases (test/sql/catalog.test.ts), in order: a
 * fixture with NULLs and negatives first, then one group per function family.
 */
const o = (sql: string): Entry => ({ sql, ordered: true });
const p = (sql: string, params: unknown[]): Entry => ({ sql, params, ordered: true });

export const catalogCases: Entry[] = [
  `create table vals (id int primary key, i bigint, f float8, n numeric, s text, j jsonb, tags text[], ts timestamptz, d date)`,
  `insert into vals values (1, 7, 2.5, 2.675, 'Hello World', '{"a":1,"b":null,"c":{"d":[1,2,null]}}', '{a,b,c}', '2024-03-05T07:08:09.123Z', '2024-02-29')`,
  `insert into vals values (2, -7, -2.5, -0.5, 'foo,bar,,baz', '[1,"x",null,{"k":null}]', '{b}', '2023-01-31T10:00:00Z', '2023-12-31')`,
  `insert into vals values (3, 0, 0.5, 1.5, 'ÅßçD éf', '"str"', '{}', '1999-12-31T23:59:59Z', '2000-01-01')`,
  `insert into vals values (4, null, null, null, null, null, null, null, null)`,
  `insert into vals values (5, 9223372036854775807, 12345.678, 123456.789, '', '{}', '{x,y}', '2024-12-25T18:30:00Z', '2024-01-01')`,
  ...numbers(),
  ...strings(),
  ...regex(),
  ...json(),
  ...arrays(),
  ...times(),
  ...integers(),
  ...mixed(),
].map((x) => (typeof x === 'string' ? { sql: x } : x));


function numbers(): Array<string | Entry> {
  return [
    o(`select id, mod(i, 3) as m, mod(i, -3) as m2 from vals where id < 5 order by id`),
    `select mod(7, 2) as a, mod(-7, 2) as b, mod(7, -2) as c, mod(5.5, 2) as d, mod(-5.5, 2) as e, mod(null, 2) as f`,
    `select mod(7, 0)`,
    `select mod(7.5, 0)`,
    `select div(7, 2) as a, div(-7, 2) as b, div(7.5, 2) as c, div(null, 2) as d, div(-7.5, -2) as e`,
    `select div(1, 0)`,
    `select power(2, 3) as a, power(2, -1) as b, power(-2, 3) as c, power(2.5, 2) as d, power(9, 0.5) as e, power(null, 2) as f, pow(3, 2) as g`,
    `select power(0, -1)`,
    `select power(-8, 0.5)`,
    `select power(0, 0) as a, power(-1, 3) as b`,
    o(`select id, power(f, 2) as p from vals order by id`),
    `select sqrt(16) as a, sqrt(2) as b, sqrt(2.25) as c, sqrt(0) as d, sqrt(null) as e`,
    `select sqrt(-1)`,
    `select cbrt(27) as a, cbrt(-8) as b, cbrt(2) as c, cbrt(0) as d, cbrt(null) as e`,
    `select exp(0) as a, exp(1) as b, exp(-1) as c, exp(2.5) as d, exp(null) as e`,
    `select exp(1000)`,
    `select ln(1) as a, ln(10) as b, ln(0.5) as c, ln(null) as d`,
    `select ln(0)`,
    `select ln(-1)`,
    `select log(100) as a, log(1000) as b, log(2, 8) as c, log(10, 1000) as d, log(0.001) as e, log(null) as f, log(2, null) as g`,
    `select log(0)`,
    `select log(-10)`,
    `select log(1, 10)`,
    `select sign(-5) as a, sign(0) as b, sign(3) as c, sign(-2.5) as d, sign(null) as e`,
    o(`select id, sign(i) as a, sign(f) as b, sign(n) as c from vals order by id`),
    `select trunc(2.7) as a, trunc(-2.7) as b, trunc(2.789, 2) as c, trunc(-2.789, 1) as d, trunc(1234.5, -2) as e`,
    o(`select id, trunc(f) as a, trunc(n) as b, trunc(n, 1) as c from vals order by id`),
    `select round(2.5) as a, round(-2.5) as b, round(3.5) as c, round(0.5) as d, round(-0.5) as e, round(null) as f`,
    `select round(2.675, 2) as a, round(-2.675, 2) as b, round(1.005, 2) as c, round(1234.5678, -2) as d, round(1.25, 1) as e, round(-1.35, 1) as f`,
    `select round(2.5::float8) as a, round(3.5::float8) as b, round(-2.5::float8) as c, round(0.5::float8) as d, round(1.5::float8) as e, round(2.4::float8) as f`,
    o(`select id, round(f) as a, round(n) as b, round(n, 2) as c, round(i) as d from vals order by id`),
    `select round(5) as a, round(-7) as b`,
    `select greatest(1, 2.5, -3) as a, least(1, 2.5, -3) as b, greatest('b', 'a', 'c') as c, least('b', null, 'a') as d, greatest(null, null) as e`,
    o(`select id, greatest(i, 0) as g, least(i, 0) as l, greatest(f, n) as gf from vals where id < 5 order by id`),
  ];
}

function strings(): Array<string | Entry> {
  return [
    `select position('b' in 'abc') as a, position('z' in 'abc') as b, position('' in 'abc') as c, position(null in 'abc') as d, position('é' in 'café') as e`,
    o(`select id, position('o' in s) as p from vals order by id`),
    `select strpos('hello', 'l') as a, strpos('hello', 'lo') as b, strpos('hello', 'x') as c, strpos(null, 'x') as d, strpos('ÅßçD', 'ç') as e`,
    o(`select id, strpos(s, 'o') as p from vals order by id`),
    `select left('abcdef', 2) as a, left('abcdef', -2) as b, left('abcdef', 0) as c, left('abc', 10) as d, left('abc', -10) as e, left(null, 2) as f, left('ÅßçD', 2) as g`,
    `select right('abcdef', 2) as a, right('abcdef', -2) as b, right('abcdef', 0) as c, right('abc', 10) as d, right('abc', -10) as e, right(null, 2) as f, right('ÅßçD', 3) as g`,
    o(`select id, left(s, 3) as l, right(s, 3) as r, left(s, -3) as l2 from vals order by id`),
    `select lpad('hi', 5) as a, lpad('hi', 5, 'xy') as b, lpad('hello', 3) as c, lpad('hi', 0) as d, lpad('hi', -1) as e, lpad('hi', 5, '') as f, lpad(null, 5) as g, lpad('hi', 4, null) as h`,
    `select rpad('hi', 5) as a, rpad('hi', 5, 'xy') as b, rpad('hello', 3) as c, rpad('hi', 0) as d, rpad('ç', 3, 'é') as e, rpad(null, 5) as f`,
    o(`select id, lpad(s, 12, '*') as l, rpad(s, 4, '-') as r from vals order by id`),
    `select repeat('ab', 3) as a, repeat('ab', 0) as b, repeat('ab', -1) as c, repeat('', 5) as d, repeat(null, 2) as e, repeat('x', null) as f`,
    `select reverse('abc') as a, reverse('') as b, reverse(null) as c, reverse('ÅßçD') as d`,
    o(`select id, reverse(s) as r, repeat(s, 2) as t from vals order by id`),
    `select split_part('a,b,c', ',', 1) as a, split_part('a,b,c', ',', 3) as b, split_part('a,b,c', ',', 4) as c, split_part('a,b,c', ',', -1) as d, split_part('a,b,c', ',', -3) as e, split_part('a,b,c', ',', -4) as f`,
    `select split_part('abc', '', 1) as a, split_part('abc', '', 2) as b, split_part('', ',', 1) as c, split_part('a--b--c', '--', 2) as d, split_part(null, ',', 1) as e`,
    `select split_part('a,b', ',', 0)`,
    o(`select id, split_part(s, ',', 2) as p, split_part(s, ' ', -1) as q from vals order by id`),
    `select initcap('hello wORLD') as a, initcap('foo-bar_baz 3rd x') as b, initcap('') as c, initcap(null) as d, initcap('élan ÉCOLE') as e`,
    o(`select id, initcap(s) as i from vals order by id`),
    `select md5('') as a, md5('abc') as b, md5(null) as c, md5('ÅßçD') as d`,
    o(`select id, md5(s) as m from vals order by id`),
    `select concat_ws(',', 'a', 'b') as a, concat_ws(',', 'a', null, 'c') as b, concat_ws(null, 'a', 'b') as c, concat_ws('-', 1, 2.5, true) as d, concat_ws('', 'x', 'y') as f`,
    o(`select id, concat_ws('|', s, i, f) as c from vals order by id`),
  ];
}

function regex(): Array<string | Entry> {
  return [
    `select 'abc' ~ 'b' as a, 'abc' ~ 'B' as b, 'abc' ~* 'B' as c, 'abc' !~ 'b' as d, 'abc' !~* 'B' as e, 'abc' !~ 'z' as f`,
    `select 'abc' ~ '^a.c$' as a, 'a1b2' ~ '[0-9]' as b, 'foo' ~ '^(f|g)o+$' as c, 'x' ~ null as d, null ~ 'x' as e`,
    `select 'abc123' ~ '^[[:alpha:]]+[[:digit:]]+$' as a, 'a b' ~ '[[:space:]]' as b, 'word' ~ '\\mword\\M' as c`,
    o(`select id, s ~ 'o' as a, s ~* '^h' as b, s !~ ',' as c from vals order by id`),
    o(`select id from vals where s ~* 'world|baz' order by id`),
    `select 'abc' ~ '('`,
    `select regexp_replace('aXbX', 'x', '-', 'gi') as a, regexp_replace('aXbX', 'X', '-') as b, regexp_replace('aXbX', 'X', '-', 'g') as c, regexp_replace('abc', 'z', '-') as d`,
    `select regexp_replace('John Smith', '(\\w+) (\\w+)', '\\2, \\1') as a, regexp_replace('abc', 'b', '[\\&]') as b, regexp_replace('a$b', '\\$', 'D') as c, regexp_replace('abc', 'b', '$1') as d`,
    `select regexp_replace(null, 'a', 'b') as a, regexp_replace('a', null, 'b') as b, regexp_replace('a', 'a', null) as c`,
    `select regexp_replace('abc', 'b', 'x', 'z')`,
    `select regexp_replace('a.c', '.', '-', 'gq') as a, regexp_match('a.c', '.', 'q') as b`,
    o(`select id, regexp_replace(s, '[aeiou]', '_', 'g') as r from vals order by id`),
    `select regexp_match('abc123', '([a-z]+)(\\d+)') as a, regexp_match('abc', 'b') as b, regexp_match('abc', 'z') as c, regexp_match('ABC', 'b', 'i') as d, regexp_match(null, 'a') as e`,
    `select regexp_match('foo', '(x)?foo') as a`,
    `select regexp_match('abc', 'b', 'g')`,
    o(`select id, regexp_match(s, '(\\w+)o') as m from vals order by id`),
  ];
}

function json(): Array<string | Entry> {
  return [
    o(`select id, jsonb_typeof(j) as t from vals order by id`),
    `select jsonb_typeof('1'::jsonb) as a, jsonb_typeof('"x"'::jsonb) as b, jsonb_typeof('null'::jsonb) as c, jsonb_typeof('[]'::jsonb) as d, jsonb_typeof('{}'::jsonb) as e, jsonb_typeof('true'::jsonb) as f, jsonb_typeof(null::jsonb) as g`,
    o(`select id, jsonb_strip_nulls(j) as s from vals order by id`),
    `select jsonb_strip_nulls('{"a":null,"b":{"c":null,"d":1},"e":[null,{"f":null}]}'::jsonb) as a, jsonb_strip_nulls('null'::jsonb) as b`,
    `select jsonb_set('{"a":1,"b":2}'::jsonb, '{a}', '10') as a, jsonb_set('{"a":1}'::jsonb, '{z}', '"new"') as b, jsonb_set('{"a":1}'::jsonb, '{z}', '3', false) as c`,
    `select jsonb_set('{"a":{"b":[1,2,3]}}'::jsonb, '{a,b,1}', '20') as a, jsonb_set('{"a":{"b":[1,2,3]}}'::jsonb, '{a,b,-1}', '30') as b, jsonb_set('{"a":{"b":[1,2,3]}}'::jsonb, '{a,b,10}', '40') as c, jsonb_set('{"a":{"b":[1,2,3]}}'::jsonb, '{a,b,-10}', '0') as d`,
    `select jsonb_set('[1,2]'::jsonb, '{0}', '{"x":true}') as a, jsonb_set('{"a":1}'::jsonb, '{x,y}', '1') as b, jsonb_set(null::jsonb, '{a}', '1') as c, jsonb_set('{"a":1}'::jsonb, '{a}', null) as d`,
    `select jsonb_set('{"a":[1]}'::jsonb, '{a,x}', '1')`,
    o(`select id, jsonb_set(j, '{a}', '"set"') as s from vals where jsonb_typeof(j) = 'object' order by id`),
    `select jsonb_insert('{"a":[0,1,2]}'::jsonb, '{a,1}', '"new"') as a, jsonb_insert('{"a":[0,1,2]}'::jsonb, '{a,1}', '"new"', true) as b, jsonb_insert('{"a":[0,1,2]}'::jsonb, '{a,-1}', '"new"', true) as c, jsonb_insert('{"a":1}'::jsonb, '{b}', '2') as d`,
    `select jsonb_insert('{"a":1}'::jsonb, '{a}', '2')`,
    `select jsonb_insert('[1,2]'::jsonb, '{10}', '3') as a, jsonb_insert('[1,2]'::jsonb, '{-10}', '0') as b`,
    `select to_jsonb('text'::text) as a, to_jsonb(42) as b, to_jsonb(2.5) as c, to_jsonb(true) as d, to_jsonb(null::text) as e, to_jsonb('{"a":1}'::jsonb) as f`,
    o(`select id, to_jsonb(s) as a, to_jsonb(i) as b, to_jsonb(tags) as c from vals where id < 5 order by id`),
    `select '{"a":1}'::jsonb || '{"b":2}'::jsonb as a, '{"a":1}'::jsonb || '{"a":2}'::jsonb as b, '[1,2]'::jsonb || '[3]'::jsonb as c, '[1]'::jsonb || '2'::jsonb as d, '1'::jsonb || '[2]'::jsonb as e, '{"a":1}'::jsonb || '[2]'::jsonb as f, '1'::jsonb || '2'::jsonb as g`,
    o(`select id, j || '{"z":true}'::jsonb as c from vals order by id`),
    `select '{"a":1,"b":2}'::jsonb - 'a' as a, '{"a":1}'::jsonb - 'z' as b, '["a","b","a"]'::jsonb - 'a' as c, '[1,2,3]'::jsonb - 1 as d, '[1,2,3]'::jsonb - -1 as e, '[1,2,3]'::jsonb - 10 as f`,
    `select '{"a":1}'::jsonb - 0`,
    `select '"x"'::jsonb - 'x'`,
    o(`select id, j - 'a' as a from vals where jsonb_typeof(j) in ('object', 'array') order by id`),
    `select '{"a":{"b":1,"c":2}}'::jsonb #- '{a,b}' as a, '[1,[2,3]]'::jsonb #- '{1,0}' as b, '{"a":1}'::jsonb #- '{z}' as c, '{"a":1}'::jsonb #- '{}' as d, '[1,2]'::jsonb #- '{-1}' as e`,
    `select '1'::jsonb #- '{a}'`,
    o(`select id, j #- '{c,d,1}' as a from vals where jsonb_typeof(j) = 'object' order by id`),
  ];
}

function arrays(): Array<string | Entry> {
  return [
    o(`select id, array_length(tags, 1) as a, cardinality(tags) as c, array_length(tags, 2) as b from vals order by id`),
    `select array_length('{a,b}'::text[], 1) as a, array_length('{}'::text[], 1) as b, cardinality('{}'::text[]) as c, cardinality('{x}'::text[]) as d, cardinality(null::text[]) as e`,
    o(`select id, tags @> '{a}' as a, tags @> '{a,c}' as b, tags @> '{}' as c, '{b}' <@ tags as d from vals order by id`),
    o(`select id, tags && '{b,x}' as a, tags && '{}' as b from vals order by id`),
    o(`select id from vals where tags && '{y,c}' order by id`),
    `select '{a,b}'::text[] @> '{b,b}'::text[] as a, '{a}'::text[] && '{b}'::text[] as b, '{a,b}'::text[] <@ '{a}'::text[] as c`,
  ];
}

function times(): Array<string | Entry> {
  return [
    `select to_char('2024-03-05T07:08:09.123Z'::timestamptz, 'YYYY-MM-DD HH24:MI:SS.MS') as a, to_char('2024-03-05T17:08:09Z'::timestamptz, 'HH12:MI AM') as b, to_char('2024-03-05T17:08:09Z'::timestamptz, 'Mon DD, YYYY') as c`,
    `select to_char('2024-03-05T07:08:09Z'::timestamptz, 'Month') as a, to_char('2024-03-05T07:08:09Z'::timestamptz, 'FMMonth') as b, to_char('2024-03-05T07:08:09Z'::timestamptz, 'Day') as c, to_char('2024-03-05T07:08:09Z'::timestamptz, 'FMDay, FMDD') as d, to_char('2024-03-05T07:08:09Z'::timestamptz, 'Dy') as e`,
    `select to_char('2024-03-05T07:08:09Z'::timestamptz, 'MONTH MON month mon DAY DY day dy') as a, to_char('2024-03-05T07:08:09Z'::timestamptz, 'YY Q DDD D "quarter" yyyy') as b, to_char('2024-12-25T00:00:00Z'::timestamptz, 'FMMM/FMDD/YYYY') as c`,
    o(`select id, to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS') as a, to_char(d, 'DD Mon YYYY') as b, to_char(ts, 'FMHH12 pm') as c from vals order by id`),
    `select to_char(0, '999') as a, to_char(0.5, '9.99') as b, to_char(-5, '999') as c, to_char(5, '999') as d, to_char(1234, '999') as e, to_char(12, 'FM999.99') as f, to_char(12.5, 'FM999.99') as g`,
    `select to_char(1234567.891, '9,999,999.99') as a, to_char(12, '9,999') as b, to_char(12, 'FM9,999') as c, to_char(5, '0000') as d, to_char(-5, '0000') as e, to_char(-0.5, '90.99') as f, to_char(-12.345, 'FM990.00') as g, to_char(1234, 'FM9,999') as h`,
    `select to_char(3.14159, '9.9') as a, to_char(2.5, '9') as b, to_char(-2.5, '9') as c, to_char(100, 'FM000') as d, to_char(7, '00.00') as e, to_char(null::int, '999') as f`,
    o(`select id, to_char(n, 'FM999,990.00') as a, to_char(i, '9999') as b from vals where id < 5 order by id`),
    `select age('2024-03-05T00:00:00Z'::timestamptz, '2023-01-31T10:00:00Z'::timestamptz) as a, age('2023-01-31T10:00:00Z'::timestamptz, '2024-03-05T00:00:00Z'::timestamptz) as b`,
    `select age('2024-01-01T00:00:00Z'::timestamptz, '2024-01-01T00:00:00Z'::timestamptz) as a, age('2024-03-31T00:00:00Z'::timestamptz, '2024-02-29T12:30:00Z'::timestamptz) as b, age('2000-02-29'::timestamptz, '1999-03-01'::timestamptz) as c`,
    o(`select id, age('2025-01-01T00:00:00Z'::timestamptz, ts) as a from vals order by id`),
    `select date_part('year', '2024-03-05T07:08:09Z'::timestamptz) as a, date_part('month', '2024-03-05T07:08:09Z'::timestamptz) as b, date_part('epoch', '2024-01-01T00:00:00.5Z'::timestamptz) as c, date_part('dow', '2024-03-05T07:08:09Z'::timestamptz) as d`,
    o(`select id, date_part('day', ts) as a, date_part('hour', ts) as b, date_part('year', d) as c from vals order by id`),
    `select extract(epoch from '2024-01-01T00:00:00Z'::timestamptz) as a, extract(year from '2024-05-17T13:14:15Z'::timestamptz) as b`,
    o(`select id, extract(epoch from ts) as e from vals order by id`),
    `select '2024-03-05T00:00:00Z'::timestamptz - '2023-01-31T10:00:00Z'::timestamptz as a, '2023-01-31T10:00:00Z'::timestamptz - '2024-03-05T00:00:00Z'::timestamptz as b, '2024-01-01T00:00:00Z'::timestamptz - '2024-01-01T00:00:00Z'::timestamptz as c`,
    o(`select id, '2025-01-01T00:00:00Z'::timestamptz - ts as a from vals order by id`),
    o(`select id, d - '2024-01-01'::date as days from vals order by id`),
  ];
}

function integers(): Array<string | Entry> {
  return [
    `select 9223372036854775807 + 1`,
    o(`select -i - 2 from vals where id = 5`),
    `select 9223372036854775807 * 2`,
    `select 2147483647 + 1`,
    `select 2147483647 * 2`,
    `select -2147483647 - 2`,
    `select 2147483647 + 1::bigint as a, 4000000000 * 2 as b, 3000000000 + 3000000000 as c`,
    `select 7 / 2 as a, -7 / 2 as b, 7 / -2 as c, -7 / -2 as d, 7 % 3 as e, -7 % 3 as f, 7 % -3 as g, 0 / 5 as h`,
    `select 1 / 0`,
    `select 5 % 0`,
    o(`select (-i - 1) / -1 from vals where id = 5`),
    o(`select (-i - 1) % -1 as a from vals where id = 5`),
    `select 2 + 3 * 4 - 1 as a, (2 + 3) * 4 as b, 10 - 2 - 3 as c, 100 / 7 / 2 as d, null + 1 as e, 1 - null as f`,
    o(`select id, i + 1 as a, i - 1 as b, i * 2 as c, i / 2 as d, i % 4 as e from vals where id < 5 order by id`),
    o(`select id, i + 1 from vals where id = 5`),
    o(`select id, i * -1 as a from vals where id < 5 order by id`),
    o(`select id, i / 0 as a from vals where id = 4`),
    `select 7 / 2.0 as a, 7.0 / 2 as b, 1 + 2.5 as c, 3 * 1.5 as d`,
  ];
}

/** Parameters, WHERE and ORDER BY, writes, and errors raised mid-scan. */
function mixed(): Array<string | Entry> {
  return [
    p(`select left($1, 2) as a, right($1, 2) as b, reverse($1) as c, initcap($1) as d`, ['hello there']),
    p(`select lpad($1, $2, '0') as a, repeat($1, $2) as b`, ['7', 3]),
    p(`select split_part($1, $2, $3) as a`, ['x|y|z', '|', 2]),
    p(`select id from vals where s ~* $1 order by id`, ['^h']),
    p(`select regexp_replace($1, $2, $3, 'g') as r`, ['a1b22c333', '[0-9]+', '#']),
    p(`select mod(cast($1 as int), 3) as a, power(cast($2 as float8), 2) as b`, [-10, 1.5]),
    p(`select jsonb_set(j, '{a}', cast($1 as jsonb)) as s from vals where id = 1`, ['[1,2]']),
    o(`select id from vals where mod(id, 2) = 0 order by id`),
    o(`select id, s from vals where length(s) > 0 order by reverse(s)`),
    o(`select id from vals where strpos(s, ',') > 0 or s ~ '^Å' order by id`),
    o(`select id, i + id as a, i * id as b, id - i as c from vals where id < 5 order by id`),
    o(`select id, i / id as a, i % id as b from vals where id < 5 order by id`),
    o(`select id, greatest(id, 3) * 2 as g from vals order by id`),
    o(`select id, round(n * 2, 1) as r, trunc(f * 3) as t from vals where id < 5 order by id`),
    o(`select id, sqrt(abs(f)) as s, ln(id) as l, exp(id) as e from vals order by id`),
    o(`select id, log(10, id * 10) as l from vals order by id`),
    `select mod(i, 0) from vals where id = 1`,
    `select sqrt(f) from vals where id = 2`,
    `select i + 1 from vals where id = 5`,
    `select i * 2 from vals where id = 5`,
    o(`select id, j || '{"x":1}' as c from vals where id < 4 order by id`),
    o(`select id, j - 0 as d from vals where jsonb_typeof(j) = 'array' order by id`),
    o(`select id, jsonb_strip_nulls(jsonb_set(j, '{b}', 'null')) as s from vals where jsonb_typeof(j) = 'object' order by id`),
    o(`select id, cardinality(tags) as c from vals where tags @> '{b}' order by id`),
    o(`select id, array_length(tags, 1) as n from vals where array_length(tags, 1) > 1 order by id`),
    o(`update vals set s = initcap(lower(s)) where id = 1 returning id, s`),
    o(`update vals set i = i + 1 where id = 2 returning id, i`),
    `update vals set i = i + 1 where id = 5`,
    o(`select id, i from vals where id = 2`),
    o(`select id, to_char(ts, 'YYYY') as y, count(*) as c from vals group by id, to_char(ts, 'YYYY') order by id`),
    o(`select to_char(ts, 'YYYY') as y, count(*) as c from vals group by 1 order by 1`),
    o(`select id, date_part('year', age('2030-01-01T00:00:00Z'::timestamptz, ts)) as y from vals order by id`),
    o(`select id, extract(epoch from '2025-01-01T00:00:00Z'::timestamptz - ts) as secs from vals order by id`),
    `select extract(epoch from '1 day 2 hours'::interval) as a, extract(hour from '26 hours'::interval) as b, date_part('epoch', interval '1 year') as c, extract(minute from '90 minutes'::interval) as d, extract(day from '-3 days'::interval) as e`,
    o(`select id, '2025-01-01T00:00:00Z'::timestamptz - ts > interval '300 days' as a, '2025-01-01T00:00:00Z'::timestamptz - ts < '7 days' as b from vals order by id`),
    o(`select id from vals where '2025-01-01T00:00:00Z'::timestamptz - ts < interval '10 days' order by id`),
    `select interval '10 days' > interval '9 days' as a, interval '1 month' = interval '30 days' as b, interval '1 year' < interval '365 days' as c, interval '25 hours' > interval '1 day' as d, interval '2 hours' <> '120 minutes' as e`,
    o(`select id, age('2030-01-01T00:00:00Z'::timestamptz, ts) >= interval '10 years' as old from vals order by id`),
    o(`select id, '2025-01-01T00:00:00Z'::timestamptz - ts as gap from vals where ts is not null order by gap desc`),
    o(`select id from vals where ts is not null order by age('2030-01-01T00:00:00Z'::timestamptz, ts), id`),
    `select interval '1 day 2 hours' as a, interval '90 minutes' as b, interval '2 years 3 months' as c, '1 week'::interval as d`,
    `select md5(concat_ws(':', 'a', 'b')) as m, upper(md5('x')) as u, length(md5('y')) as n`,
    `select split_part(md5('k'), 'a', 1) is not null as ok, lpad(to_char(42, 'FM999'), 5, '0') as p`,
    `select regexp_match('key=value', '(\\w+)=(\\w+)') as a, regexp_match('no match', '=') as b`,
    `select 'Hello' ~ '^[A-Z]' and 'hello' !~ '^[A-Z]' as both`,
    `select 1 + 2 * 3 % 4 - 5 / 2 as a, -7 % -3 as b, 2147483647 - 1 + 1 as c`,
  ];
}
