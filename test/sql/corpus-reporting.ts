import type { Entry } from './harness.js';

/**
 * Reporting queries as Supabase users write them (issue 17, late): date_trunc group-bys,
 * FILTER, percentiles, window functions, coalesce/nullif chains, CASE forms, string_agg
 * with order, DISTINCT ON, EXISTS / NOT EXISTS, interval arithmetic and to_char — with
 * NULLs, empty groups and Postgres' own refusals.
 */
const o = (sql: string, params?: unknown[]): Entry => ({ sql, ordered: true, params });
const u = (sql: string): Entry => ({ sql, unsupported: true });

export const reporting: Array<string | Entry> = [
  `create table rp_customers (id int primary key, name text not null, email text, plan text, signed_up_at timestamptz not null)`,
  `create table rp_sales (id int primary key, customer_id int references rp_customers (id), region text, product text not null, amount numeric(12,2), qty int not null default 1, sold_at timestamptz not null, refunded boolean not null default false)`,
  `insert into rp_customers values (1, 'Acme', 'ops@acme.test', 'pro', '2024-01-03T09:00:00Z'), (2, 'Globex', null, 'free', '2024-01-20T12:00:00Z'), (3, 'Initech', 'it@initech.test', null, '2024-02-11T08:30:00Z'), (4, 'Umbrella', '', 'pro', '2024-03-01T00:00:00Z')`,
  `insert into rp_sales values
    (1, 1, 'eu', 'widget', 100.00, 2, '2024-01-05T10:00:00Z', false),
    (2, 1, 'eu', 'gadget', 250.50, 1, '2024-01-17T15:30:00Z', false),
    (3, 2, 'us', 'widget', 80.25, 4, '2024-02-02T09:00:00Z', true),
    (4, 3, 'us', 'gizmo', null, 1, '2024-02-14T18:45:00Z', false),
    (5, 1, null, 'widget', 120.00, 3, '2024-02-28T23:59:59Z', false),
    (6, 2, 'apac', 'gadget', 300.00, 1, '2024-03-01T00:00:00Z', false),
    (7, null, 'eu', 'gizmo', 15.75, 10, '2024-03-15T12:00:00Z', true),
    (8, 3, 'us', 'widget', 99.99, 1, '2024-03-31T20:00:00Z', false)`,

  // ---- date_trunc group-bys
  o(`select date_trunc('month', sold_at) as month, count(*) as n, sum(amount) as revenue from rp_sales group by 1 order by 1`),
  o(`select date_trunc('month', sold_at) as month, sum(amount) filter (where not refunded) as net from rp_sales group by date_trunc('month', sold_at) order by month`),
  o(`select date_trunc('week', sold_at) as week, count(*) from rp_sales group by week order by week`),
  o(`select date_trunc('day', sold_at)::date as day, sum(qty) as units from rp_sales group by 1 order by 1 desc limit 3`),
  o(`select extract(year from sold_at) as y, extract(month from sold_at) as m, count(*) from rp_sales group by 1, 2 order by 1, 2`),
  o(`select to_char(sold_at, 'YYYY-MM') as month, round(avg(amount), 2) as avg_amount from rp_sales group by 1 order by 1`),
  o(`select region, date_trunc('month', sold_at) as month, count(*) from rp_sales where region is not null group by region, month order by region, month`),

  // ---- FILTER and conditional aggregates
  `select count(*) filter (where refunded) as refunds, count(*) filter (where not refunded) as kept, count(amount) as priced from rp_sales`,
  `select sum(qty) filter (where region = 'eu') as eu, sum(qty) filter (where region = 'us') as us, sum(qty) filter (where region = 'mars') as mars from rp_sales`,
  o(`select product, count(*) filter (where amount > 100) as big, avg(amount) filter (where amount is not null) as avg_priced from rp_sales group by product order by product`),
  `select sum(case when refunded then 0 else amount end) as net, sum(case when refunded then amount end) as refunded from rp_sales`,
  `select count(distinct customer_id) as buyers, count(distinct region) as regions from rp_sales`,
  o(`select product, bool_or(refunded) as any_refund, bool_and(qty > 0) as all_positive from rp_sales group by product order by product`),

  // ---- percentiles and ordered-set aggregates
  `select percentile_cont(0.5) within group (order by amount) as median from rp_sales`,
  `select percentile_disc(0.5) within group (order by qty) as p50 from rp_sales`,
  o(`select product, percentile_cont(0.9) within group (order by amount) as p90 from rp_sales group by product order by product`),
  `select mode() within group (order by product) as top_product from rp_sales`,

  // ---- window functions and frames
  o(`select id, amount, sum(amount) over (order by sold_at) as running from rp_sales order by sold_at`),
  o(`select id, region, amount, rank() over (partition by region order by amount desc nulls last) as r from rp_sales order by region nulls last, r, id`),
  o(`select id, amount, lag(amount) over (order by id) as prev, lead(amount, 2) over (order by id) as next2 from rp_sales order by id`),
  o(`select id, amount, sum(amount) over (order by id rows between 1 preceding and current row) as pair from rp_sales order by id`),
  o(`select id, qty, avg(qty) over (order by id rows between 2 preceding and current row) as moving_avg from rp_sales order by id`),
  o(`select id, qty, sum(qty) over (order by id rows between unbounded preceding and current row) as cum from rp_sales order by id`),
  o(`select id, qty, max(qty) over (order by id rows between current row and 1 following) as ahead from rp_sales order by id`),
  o(`select id, first_value(product) over (partition by customer_id order by sold_at) as first_buy, count(*) over (partition by customer_id) as n from rp_sales order by id`),
  o(`select id, ntile(3) over (order by id) as bucket, round(cume_dist() over (order by qty)::numeric, 3) as cd from rp_sales order by id`),
  o(`select id, amount, amount - avg(amount) over () as diff from rp_sales where amount is not null order by id`),
  o(`select customer_id, sold_at, row_number() over (partition by customer_id order by sold_at desc) as rn from rp_sales where customer_id is not null order by customer_id, rn`),

  // ---- coalesce / nullif chains and CASE forms
  o(`select name, coalesce(nullif(email, ''), 'no email') as contact from rp_customers order by id`),
  o(`select name, coalesce(plan, 'none') as plan, nullif(plan, 'free') as paid_plan from rp_customers order by id`),
  o(`select id, coalesce(amount, 0) * qty as total from rp_sales order by id`),
  o(`select id, amount / nullif(qty, 0) as unit from rp_sales order by id`),
  o(`select id, case when amount is null then 'unpriced' when amount >= 200 then 'large' when amount >= 100 then 'medium' else 'small' end as size from rp_sales order by id`),
  o(`select id, case region when 'eu' then 'Europe' when 'us' then 'Americas' else 'Other' end as area from rp_sales order by id`),
  o(`select plan, count(*) from rp_customers group by plan order by case plan when 'pro' then 1 when 'free' then 2 else 3 end`),
  o(`select id, coalesce(region, product, 'x') as label from rp_sales order by id`),

  // ---- string_agg with order, DISTINCT ON
  o(`select customer_id, string_agg(product, ', ' order by sold_at) as products from rp_sales group by customer_id order by customer_id nulls last`),
  `select string_agg(distinct product, '|') as products from rp_sales`,
  o(`select region, string_agg(id::text, ',' order by id desc) as ids from rp_sales group by region order by region nulls first`),
  o(`select distinct on (customer_id) customer_id, product, sold_at from rp_sales where customer_id is not null order by customer_id, sold_at desc`),
  o(`select distinct on (region) region, amount from rp_sales order by region, amount desc nulls last`),

  // ---- EXISTS / NOT EXISTS / IN
  o(`select name from rp_customers c where exists (select 1 from rp_sales s where s.customer_id = c.id and s.amount > 200) order by name`),
  o(`select name from rp_customers c where not exists (select 1 from rp_sales s where s.customer_id = c.id) order by name`),
  o(`select name from rp_customers where id in (select customer_id from rp_sales where refunded) order by name`),
  o(`select name from rp_customers where id not in (select customer_id from rp_sales where customer_id is not null) order by name`),
  o(`select c.name, (select count(*) from rp_sales s where s.customer_id = c.id) as orders from rp_customers c order by orders desc, c.name`),

  // ---- interval arithmetic and date filters
  o(`select id from rp_sales where sold_at >= '2024-03-01'::timestamptz - interval '1 day' order by id`),
  o(`select id, sold_at + interval '30 days' as due from rp_sales where id <= 3 order by id`),
  o(`select id, sold_at - interval '1 hour' as earlier from rp_sales where id = 1`),
  o(`select c.name, s.sold_at - c.signed_up_at as since_signup from rp_customers c join rp_sales s on s.customer_id = c.id where s.id in (1, 3) order by s.id`),
  o(`select id from rp_sales where sold_at between '2024-02-01' and '2024-02-29T23:59:59Z' order by id`),
  o(`select id, extract(epoch from sold_at - '2024-01-01T00:00:00Z'::timestamptz) / 86400 as days_in from rp_sales order by id`),
  o(`select date_trunc('month', sold_at) + interval '1 month' - interval '1 day' as month_end from rp_sales where id = 2`),
  o(`select id, age('2024-12-31T00:00:00Z'::timestamptz, sold_at) as age from rp_sales where id in (1, 8) order by id`),

  // ---- to_char
  o(`select id, to_char(sold_at, 'YYYY-MM-DD HH24:MI') as at from rp_sales order by id`),
  o(`select to_char(sold_at, 'Mon DD, YYYY') as d, to_char(sold_at, 'Day') as dow from rp_sales where id in (1, 6) order by id`),
  o(`select to_char(amount, 'FM999,990.00') as price from rp_sales where amount is not null order by id`),
  o(`select to_char(signed_up_at, 'YYYY"Q"Q') as quarter, count(*) from rp_customers group by 1 order by 1`),

  o(`select id, qty, sum(qty) over (order by id rows 2 preceding) as last3 from rp_sales order by id`),
  o(`select id, region, sum(qty) over (partition by region order by id rows between unbounded preceding and unbounded following) as region_total, last_value(id) over (partition by region order by id rows between current row and unbounded following) as last_id from rp_sales order by id`),
  o(`select id, qty, sum(qty) over (order by qty groups between 1 preceding and 1 following) as near from rp_sales order by id`),
  o(`select id, qty, sum(qty) over (order by id rows between 1 preceding and 1 following exclude current row) as neighbours from rp_sales order by id`),
  o(`select id, count(amount) over (order by id rows between 2 preceding and 1 preceding) as priced_before from rp_sales order by id`),
  `select percentile_cont(0.5) within group (order by amount) as m, percentile_disc(0.5) within group (order by amount) as d, mode() within group (order by region) as r from rp_sales where false`,
  `select percentile_cont(null) within group (order by amount) as m from rp_sales`,
  `select percentile_disc(0.25) within group (order by sold_at desc) as d, percentile_cont(0) within group (order by qty) as lo, percentile_cont(1) within group (order by qty) as hi from rp_sales`,
  o(`select region, percentile_disc(0.5) within group (order by product) as p, mode() within group (order by qty desc) as m from rp_sales group by region order by region nulls last`),
  `select percentile_cont(0.5) within group (order by qty) filter (where not refunded) as m from rp_sales`,
  `select string_agg(distinct region, ',') as regions, string_agg(distinct region, ',') filter (where false) as none from rp_sales`,
  `select percentile_cont(0.5) within group (order by product) from rp_sales`,
  `select percentile_cont(0.5) within group (order by qty) over () from rp_sales`,
  `select sum(qty) over (order by id rows between -1 preceding and current row) from rp_sales`,
  `select sum(qty) over (order by id rows between current row and 1 preceding) from rp_sales`,
  u(`select sum(qty) over (order by qty range between 1 preceding and current row) from rp_sales`),
  u(`select sum(qty) over (order by sold_at range between interval '1 day' preceding and current row) from rp_sales`),

  // ---- more reporting shapes
  o(`select product, count(*) as n, round(100.0 * count(*) / sum(count(*)) over (), 1) as pct from rp_sales group by product order by product`),
  o(`select region, sum(amount) as revenue, sum(amount) / sum(sum(amount)) over () as share from rp_sales where region is not null group by region order by region`),
  o(`with monthly as (select date_trunc('month', sold_at) as month, sum(amount) as revenue from rp_sales group by 1) select month, revenue, revenue - lag(revenue) over (order by month) as growth from monthly order by month`),
  o(`select d::date as day, count(s.id) as n from generate_series('2024-03-01'::timestamptz, '2024-03-04'::timestamptz, interval '1 day') d left join rp_sales s on date_trunc('day', s.sold_at) = d group by d order by d`),
  o(`select id, lag(qty, 1, 0) over (order by id) as prev_qty from rp_sales order by id`),
  o(`select extract(dow from sold_at) as dow, extract(hour from sold_at) as h, date_part('day', sold_at) as dd from rp_sales order by id`),
  o(`select s.id, s.sold_at::date - c.signed_up_at::date as days from rp_sales s join rp_customers c on c.id = s.customer_id order by s.id`),
  o(`select customer_id, count(*) from rp_sales group by customer_id having count(*) > 1 order by customer_id`),
  o(`select array_agg(distinct product order by product) as products from rp_sales`),
  o(`select jsonb_build_object('n', count(*), 'revenue', sum(amount)) as summary from rp_sales`),
  o(`select region, count(*) filter (where refunded) * 100.0 / count(*) as refund_rate from rp_sales group by region order by region nulls last`),
  o(`select c.name, coalesce(sum(s.amount), 0) as spent from rp_customers c left join rp_sales s on s.customer_id = c.id and not s.refunded group by c.id, c.name order by spent desc, c.name`),
  o(`select id, sold_at + qty * interval '1 day' as ship_by from rp_sales where id < 3 order by id`),
  o(`select to_char(date_trunc('month', sold_at), 'FMMonth YYYY') as label, count(*) from rp_sales group by date_trunc('month', sold_at) order by date_trunc('month', sold_at)`),
  o(`select case when extract(hour from sold_at) < 12 then 'am' else 'pm' end as half, count(*) from rp_sales group by 1 order by 1`),
  o(`select name, case when plan is null then 'trial' when plan = 'pro' and email is not null and email <> '' then 'pro (reachable)' else plan end as segment from rp_customers order by id`),

  o(`select interval '1 day' * 2 as a, 3 * interval '1 hour' as b, interval '1 month' * 1.5 as c, interval '1 day 2 hours' * 0.5 as d, interval '1 hour' * null::int as e`),
  o(`select id, sold_at + (id - 1) * interval '1 week' as follow_up, interval '1 year 1 month' * qty as term from rp_sales where id in (1, 3) order by id`),
  o(`select id from rp_sales where sold_at < '2024-01-01T00:00:00Z'::timestamptz + 2 * interval '1 month' order by id`),
  o(`select ('2024-03-01'::timestamptz + g * interval '1 day')::date as day, (select count(*) from rp_sales s where s.sold_at >= '2024-03-01'::timestamptz + g * interval '1 day' and s.sold_at < '2024-03-01'::timestamptz + (g + 1) * interval '1 day') as n from generate_series(0, 3) g order by g`),

  o(`select g from generate_series('2024-01-31T00:00:00Z'::timestamptz, '2024-06-01T00:00:00Z'::timestamptz, interval '1 month') g`),
  o(`select g as at from generate_series('2024-03-02'::date, '2024-03-01'::date, '-6 hours') g`),
  o(`select count(*) as n from generate_series('2024-01-01T00:00:00Z'::timestamptz, '2024-01-01T00:00:00Z'::timestamptz - interval '1 day', interval '1 hour') g`),
  `select * from generate_series('2024-01-01'::timestamptz, '2024-01-02'::timestamptz, interval '0 days')`,
  `select * from generate_series('2024-01-01'::timestamptz, '2024-01-02'::timestamptz, 5)`,

  o(`select to_char(sold_at, 'IYYY-IW') as wk, count(*) from rp_sales group by 1 order by 1`),
  o(`select id, to_char(sold_at, 'IYYY IW ID IDDD') as iso, to_char(sold_at, 'WW W') as weeks from rp_sales order by id`),
  o(`select to_char('2021-01-03T00:00:00Z'::timestamptz, 'IYYY-IW-ID') as a, to_char('2020-12-31T00:00:00Z'::timestamptz, 'IYYY-IW') as b, to_char('2024-12-30T00:00:00Z'::timestamptz, 'IYYY-"W"IW') as c`),
  o(`select id, nth_value(product, 2) over (order by id) as second, nth_value(amount, 3) over (order by id rows between unbounded preceding and unbounded following) as third from rp_sales order by id`),
  `select nth_value(product, 0) over (order by id) from rp_sales`,
  o(`select date(sold_at) as d, count(*) from rp_sales group by date(sold_at) order by d`),
  `select date('2024-02-30')`,
  o(`select to_char('2024-03-01T09:05:07Z'::timestamptz, 'FMDDth Month YYYY') as a, to_char('2024-03-22T09:05:07Z'::timestamptz, 'DDTH') as b, to_char('2024-03-23T09:05:07Z'::timestamptz, 'DDth') as c, to_char('2024-03-12T00:00:00Z'::timestamptz, 'FMDDth') as d`),
  o(`select to_char('2024-03-01T09:05:07Z'::timestamptz, 'CC J RM rm SSSS') as a, to_char('2024-12-01T00:00:00Z'::timestamptz, 'FMRM') as b`),
  o(`select to_char('2024-03-01T09:05:07Z'::timestamptz, 'TZH:TZM OF') as a, to_char('2024-03-01T09:05:07Z'::timestamptz, 'YYYY-MM-DD"T"HH24:MI:SS') as b`),
  o(`select to_char('2024-03-01T09:05:07Z'::timestamptz, 'Dy, DD Mon YYYY HH24:MI:SS') as rfc, to_char('2024-03-01T09:05:07Z'::timestamptz, 'dd.mm.yyyy hh24:mi') as lower`),
  o(`select to_char(1234567.891, 'FM9,999,999.00') as a, to_char(-5, '999') as b, to_char(0.5, '0.99') as c, to_char(12, 'FM00') as d`),

  o(`select date_bin('15 minutes', sold_at, '2024-01-01') as bin, count(*) from rp_sales group by 1 order by 1`),
  o(`select id, date_bin(interval '1 day', sold_at, '2024-01-01T06:00:00Z'::timestamptz) as shift_day, date_bin('1 hour', null::timestamptz, '2024-01-01') as none from rp_sales where id in (1, 5) order by id`),
  o(`select width_bucket(qty, 0, 10, 5) as b, count(*) from rp_sales group by 1 order by 1`),
  o(`select width_bucket(amount, 300, 0, 3) as b, width_bucket(null::float8, 0, 1, 2) as n from rp_sales order by id`),
  o(`select justify_days(interval '35 days') as a, justify_days(interval '-35 days') as b, justify_hours(interval '27 hours') as c, justify_days(interval '1 month -10 days') as d`),
  `select date_bin('1 month', sold_at, '2024-01-01') from rp_sales`,
  `select date_bin('0 minutes', sold_at, '2024-01-01') from rp_sales`,
  `select width_bucket(qty, 0, 10, 0) from rp_sales`,
  `select width_bucket(qty, 5, 5, 2) from rp_sales`,

  // ---- Postgres refuses these too
  `select percentile_cont(1.5) within group (order by amount) from rp_sales`,
  `select sum(amount) over (order by id rows between 1 following and 1 preceding) from rp_sales`,
  `select date_trunc('fortnight', sold_at) from rp_sales`,
  `select region, count(*) from rp_sales group by 1 having amount > 0`,
  `select coalesce(amount, 'none') from rp_sales`,
  `select to_char(sold_at, 'YYYY') as y, count(*) from rp_sales group by date_trunc('month', sold_at)`,
  `select date_trunc('month', sold_at) as m, sold_at, count(*) from rp_sales group by date_trunc('month', sold_at)`,
];
