import { EdgeError } from '../../core/errors.js';
import { unsupported, type Node } from './emit.js';
import type { PgNode } from './parse.js';

/**
 * Reads PostgreSQL's parse tree (libpg-query, `{ NodeType: fields }`) into the emitter's
 * tree (emit.ts, statements.ts): expressions and queries here, statements in
 * lower-stmt.ts. The switch over node types and their fields is exhaustive: a node type the
 * emitter has no translation for, or a field that changes the meaning and is not read, is a
 * 400 `unsupported_sql` naming the construct, never dropped.
 */

let depth = 0;
/** The emitter's own limit (emit.ts MAX_DEPTH): deeper is refused here, before the recursion nears the stack's end. */
const MAX_DEPTH = 200;

/** A node's type and fields. */
export function kind(n: unknown): [string, Record<string, unknown>] {
  if (!n || typeof n !== 'object') throw unsupported('this expression');
  const keys = Object.keys(n);
  if (keys.length !== 1) throw unsupported('this syntax node');
  const k = keys[0]!;
  return [k, ((n as PgNode)[k] ?? {}) as Record<string, unknown>];
}

/** A `String` node's text. */
export const str = (n: unknown): string => {
  const [k, f] = kind(n);
  if (k !== 'String') throw unsupported(`${k} where a name is expected`);
  return String(f.sval ?? '');
};

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
/** The items of a `List` node (or of a plain array). */
const items = (v: unknown): unknown[] => (Array.isArray(v) ? v : list((v as { List?: { items?: unknown } } | null)?.List?.items));

/** Fields that only say where a node was written, or its defaults: never a meaning to lose. */
const NEUTRAL = new Set(['location', 'funcformat', 'inh', 'relpersistence']);

/** Refuses any field of `f` that is set and not in `read` (nor neutral), naming it. */
export function only(what: string, f: Record<string, unknown>, read: string): void {
  const ok = read.split(',');
  for (const [k, v] of Object.entries(f)) {
    if (NEUTRAL.has(k) || ok.includes(k)) continue;
    if (v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0)) continue;
    throw unsupported(`${k.replaceAll('_', ' ')} in ${what}`);
  }
}

/** SQL text as the emitter's string-literal node (which reads doubled quotes). */
const text = (s: string): Node => ({ type: 'single_quote_string', value: s.replaceAll("'", "''") });

/** A type name → the emitter's type node (`dataType` upper case, `length`/`scale` from the modifiers). */
export function typeNode(t: Record<string, unknown>): Node {
  let names = list(t.names).map(str);
  if (names.length === 2 && (names[0] === 'pg_catalog' || names[0] === 'public')) names = names.slice(1);
  if (names.length !== 1) throw unsupported(`type ${names.join('.')}`);
  if (t.setof || t.pct_type) throw unsupported(`type ${names[0]} with SETOF or %TYPE`);
  const mods = list(t.typmods).map((m) => {
    const [k, f] = kind(m);
    const ival = (f.ival as { ival?: number } | undefined)?.ival;
    if (k !== 'A_Const' || !f.ival) throw unsupported('a type modifier other than a number');
    return ival ?? 0;
  });
  const aliases: Record<string, string> = { bpchar: 'CHAR', float4: 'FLOAT4', int2: 'INT2', int4: 'INT4', int8: 'INT8', bool: 'BOOL' };
  let dataType = (aliases[names[0]!] ?? names[0]!).toUpperCase();
  const bounds = list(t.arrayBounds);
  if (bounds.length > 1) throw unsupported('multidimensional array types');
  if (bounds.length === 1) dataType += '[]';
  const out: Node = { dataType };
  if (mods.length >= 1) out.length = mods[0];
  if (mods.length >= 2) out.scale = mods[1];
  if (mods.length > 2) throw unsupported(`type ${names[0]} with ${mods.length} modifiers`);
  return out;
}

/** `a.b.c` of a ColumnRef: its parts (`*` for A_Star). */
function refParts(f: Record<string, unknown>): string[] {
  return list(f.fields).map((p) => {
    const [k] = kind(p);
    return k === 'A_Star' ? '*' : str(p);
  });
}

export function columnRef(f: Record<string, unknown>): Node {
  const parts = refParts(f);
  if (parts.length === 1) return { type: 'column_ref', table: null, column: parts[0] };
  if (parts.length === 2) return { type: 'column_ref', table: parts[0], column: parts[1] };
  throw unsupported(`the column reference ${parts.join('.')} (schema-qualified column references)`);
}

const SETOPS: Record<string, string> = { SETOP_UNION: 'union', SETOP_INTERSECT: 'intersect', SETOP_EXCEPT: 'except' };

/** A query (SelectStmt): set operations become the emitter's chain of members (`_next`). */
export function lowerSelect(n: unknown): Node {
  if (depth >= MAX_DEPTH) throw unsupported(`nesting deeper than ${MAX_DEPTH} levels`);
  depth++;
  try {
    return lowerQuery(n);
  } finally {
    depth--;
  }
}

function lowerQuery(n: unknown): Node {
  const [k, f] = kind(n);
  if (k !== 'SelectStmt') throw unsupported(`${k} where a query is expected`);
  if (f.op && f.op !== 'SETOP_NONE') {
    only('a set operation', f, 'op,all,larg,rarg,sortClause,limitCount,limitOffset,limitOption,withClause');
    const left = lowerSelect({ SelectStmt: f.larg });
    const [, rf] = kind({ SelectStmt: f.rarg });
    if (rf.op && rf.op !== 'SETOP_NONE') throw unsupported('a parenthesised set operation on the right of another');
    const right = lowerSelect({ SelectStmt: f.rarg });
    if (right.orderby || right.limit || right.with) throw unsupported('ORDER BY / LIMIT inside one member of a set operation');
    let last = left;
    while (last._next) last = last._next as Node;
    if (last.orderby || last.limit) throw unsupported('ORDER BY / LIMIT inside one member of a set operation');
    last._next = right;
    last.set_op = SETOPS[String(f.op)] + (f.all ? ' all' : '');
    Object.assign(right, tail(f));
    if (f.withClause) {
      if (left.with) throw unsupported('WITH inside a member of a set operation');
      left.with = withList(f.withClause);
    }
    return left;
  }
  only('SELECT', f, 'targetList,fromClause,whereClause,groupClause,havingClause,sortClause,limitCount,limitOffset,limitOption,withClause,distinctClause,valuesLists,windowClause,lockingClause,op,groupDistinct');
  if (list(f.lockingClause).length) throw unsupported('FOR UPDATE / FOR SHARE');
  if (list(f.windowClause).length) throw unsupported('named WINDOW clauses');
  if (f.groupDistinct) throw unsupported('GROUP BY DISTINCT');
  const out: Node = { type: 'select', ...tail(f) };
  if (f.withClause) out.with = withList(f.withClause);
  if (list(f.valuesLists).length) {
    out.values = list(f.valuesLists).map((row) => list(kind(row)[1].items).map(lowerExpr));
    return out;
  }
  const distinct = list(f.distinctClause);
  if (distinct.length === 1 && Object.keys(distinct[0] as object).length === 0) out.distinct = { type: 'DISTINCT' };
  else if (distinct.length) out.distinct = { type: 'DISTINCT ON', columns: distinct.map(lowerExpr) };
  out.columns = list(f.targetList).map((t) => {
    const [tk, tf] = kind(t);
    if (tk !== 'ResTarget') throw unsupported(tk);
    only('a select item', tf, 'val,name');
    return { expr: lowerExpr(tf.val), as: typeof tf.name === 'string' ? tf.name : null };
  });
  if (list(f.fromClause).length) out.from = fromList(list(f.fromClause));
  if (f.whereClause) out.where = lowerExpr(f.whereClause);
  if (list(f.groupClause).length) out.groupby = { columns: list(f.groupClause).map(groupItem) };
  if (f.havingClause) out.having = lowerExpr(f.havingClause);
  return out;
}

function groupItem(g: unknown): Node {
  const [k] = kind(g);
  if (k === 'GroupingSet') throw unsupported('GROUPING SETS, ROLLUP and CUBE');
  return lowerExpr(g);
}

/** ORDER BY and LIMIT/OFFSET of a query. */
function tail(f: Record<string, unknown>): Node {
  const out: Node = {};
  if (list(f.sortClause).length) out.orderby = list(f.sortClause).map(sortItem);
  if (f.limitOption === 'LIMIT_OPTION_WITH_TIES') throw unsupported('FETCH … WITH TIES');
  const count = f.limitCount ? limitValue(f.limitCount) : null;
  const offset = f.limitOffset ? limitValue(f.limitOffset) : null;
  if (offset) out.limit = { seperator: 'offset', value: count ? [count, offset] : [offset] };
  else if (count) out.limit = { seperator: '', value: [count] };
  return out;
}

function limitValue(v: unknown): Node {
  const [k, f] = kind(v);
  // note: LIMIT ALL is a null constant.
  if (k === 'A_Const' && f.isnull) return { type: 'null', value: null };
  return lowerExpr(v);
}

export function sortItem(s: unknown): Node {
  const [k, f] = kind(s);
  if (k !== 'SortBy') throw unsupported(k);
  if (list(f.useOp).length || f.sortby_dir === 'SORTBY_USING') throw unsupported('ORDER BY … USING');
  const nulls = f.sortby_nulls === 'SORTBY_NULLS_FIRST' ? 'NULLS FIRST' : f.sortby_nulls === 'SORTBY_NULLS_LAST' ? 'NULLS LAST' : null;
  return { expr: lowerExpr(f.node), type: f.sortby_dir === 'SORTBY_DESC' ? 'DESC' : 'ASC', nulls };
}

export function withList(w: unknown): Node[] {
  const f = w as Record<string, unknown>;
  const recursive = Boolean(f.recursive);
  return list(f.ctes).map((c) => {
    const [k, cf] = kind(c);
    if (k !== 'CommonTableExpr') throw unsupported(k);
    only('a WITH item', cf, 'ctename,aliascolnames,ctequery,ctematerialized,cterecursive,cterefcount');
    const [qk] = kind(cf.ctequery);
    const name = { value: String(cf.ctename) };
    const columns = list(cf.aliascolnames).length ? list(cf.aliascolnames).map((a) => ({ type: 'column_ref', column: str(a) })) : null;
    // note: a data-modifying item is lowered by lower-stmt.ts at the top level (dml-cte.ts); anywhere else it is refused.
    if (qk === 'InsertStmt' || qk === 'UpdateStmt' || qk === 'DeleteStmt') return { name, columns, dmlRaw: cf.ctequery, recursive };
    if (qk !== 'SelectStmt') throw unsupported(`${qk.replace(/Stmt$/, '').toUpperCase()} in WITH`);
    return { name, columns, stmt: lowerSelect(cf.ctequery), recursive };
  });
}

const JOINS: Record<string, string> = { JOIN_INNER: 'INNER JOIN', JOIN_LEFT: 'LEFT JOIN', JOIN_RIGHT: 'RIGHT JOIN', JOIN_FULL: 'FULL JOIN' };

/** A FROM list: joins flattened left to right into the emitter's list of items. */
export function fromList(items: unknown[]): Node[] {
  const out: Node[] = [];
  for (const it of items) out.push(...fromItem(it));
  return out;
}

function fromItem(it: unknown): Node[] {
  const [k, f] = kind(it);
  switch (k) {
    case 'RangeVar':
      return [rangeVar(f)];
    case 'RangeSubselect': {
      only('a subquery in FROM', f, 'subquery,alias,lateral');
      const alias = f.alias as Record<string, unknown> | undefined;
      if (!alias) throw unsupported('a subquery in FROM without an alias');
      const cols = list(alias.colnames).map(str);
      const ast = lowerSelect(f.subquery);
      // note: LATERAL: the subquery may name earlier FROM items (lateral.ts).
      return [{ expr: { ast }, as: String(alias.aliasname), columns: cols.length ? cols : null, lateral: Boolean(f.lateral) }];
    }
    case 'JoinExpr': {
      only('a join', f, 'jointype,isNatural,larg,rarg,usingClause,quals,join_using_alias,alias');
      if (f.isNatural) throw unsupported('NATURAL JOIN (write JOIN … USING (columns))');
      if (f.alias || f.join_using_alias) throw unsupported('an alias on a join');
      const left = fromItem(f.larg);
      const right = fromItem(f.rarg);
      if (right.length !== 1) throw unsupported('a parenthesised join on the right of a join');
      const r = right[0]!;
      const using = list(f.usingClause).map(str);
      let join = JOINS[String(f.jointype)];
      if (!join) throw unsupported(`join type ${String(f.jointype)}`);
      if (join === 'INNER JOIN' && !f.quals && !using.length) join = 'CROSS JOIN';
      r.join = join;
      if (f.quals) r.on = lowerExpr(f.quals);
      if (using.length) r.using = using;
      return [...left, r];
    }
    case 'RangeFunction': {
      only('a function in FROM', f, 'functions,alias,lateral,ordinality,is_rowsfrom,coldeflist');
      // note: a function in FROM is LATERAL whether written so or not (query-parts.ts: over an earlier item).
      if (f.ordinality) throw unsupported('WITH ORDINALITY');
      if (f.is_rowsfrom || list(f.functions).length !== 1) throw unsupported('ROWS FROM (…)');
      if (list(f.coldeflist).length) throw unsupported('column definition lists');
      const [fc, defs] = items(list(f.functions)[0]);
      if (defs && Object.keys(defs).length && items(defs).length) throw unsupported('column definition lists');
      const fn = lowerExpr(fc);
      if (fn.type !== 'function') throw unsupported('this FROM item');
      const alias = f.alias as Record<string, unknown> | undefined;
      const cols = list(alias?.colnames).map(str);
      return [{ fn, as: alias ? String(alias.aliasname) : null, columns: cols.length ? cols : null }];
    }
    case 'RangeTableSample':
      throw unsupported('TABLESAMPLE');
  }
  throw unsupported(`${k} in FROM`);
}

export function rangeVar(f: Record<string, unknown>): Node {
  only('a table reference', f, 'schemaname,relname,alias,catalogname');
  if (f.catalogname) throw unsupported('database-qualified table names');
  if (f.inh !== true) throw unsupported('ONLY');
  const alias = f.alias as Record<string, unknown> | undefined;
  if (alias && list(alias.colnames).length) throw unsupported('column aliases on a table');
  return { db: typeof f.schemaname === 'string' ? f.schemaname : null, table: String(f.relname), as: alias ? String(alias.aliasname) : null };
}

const OPS: Record<string, string> = { '~~': 'LIKE', '!~~': 'NOT LIKE', '~~*': 'ILIKE', '!~~*': 'NOT ILIKE' };

/** An expression. */
export function lowerExpr(n: unknown): Node {
  if (depth >= MAX_DEPTH) throw unsupported(`expressions nested deeper than ${MAX_DEPTH} levels`);
  depth++;
  try {
    return lowerNode(n);
  } finally {
    depth--;
  }
}

function lowerNode(n: unknown): Node {
  const [k, f] = kind(n);
  switch (k) {
    case 'ColumnRef':
      return columnRef(f);
    case 'A_Const':
      return constant(f);
    case 'ParamRef':
      return { type: 'var', prefix: '$', name: f.number ?? 0 };
    case 'TypeCast': {
      const target = typeNode(f.typeName as Record<string, unknown>);
      // note: `interval '1' day` keeps its unit as a type modifier: refused rather than read as '1'.
      if (target.dataType === 'INTERVAL' && target.length !== undefined) throw unsupported('interval fields (write interval \'1 day\')');
      return { type: 'cast', expr: lowerExpr(f.arg), target: [target] };
    }
    case 'A_Expr':
      return aExpr(f);
    case 'BoolExpr': {
      const args = list(f.args).map(lowerExpr);
      if (f.boolop === 'NOT_EXPR') return { type: 'unary_expr', operator: 'NOT', expr: args[0] };
      const op = f.boolop === 'AND_EXPR' ? 'AND' : 'OR';
      return args.reduce((l, r) => ({ type: 'binary_expr', operator: op, left: l, right: r }));
    }
    case 'NullTest':
      return { type: 'binary_expr', operator: f.nulltesttype === 'IS_NOT_NULL' ? 'IS NOT' : 'IS', left: lowerExpr(f.arg), right: { type: 'null', value: null } };
    case 'BooleanTest': {
      const t = String(f.booltesttype);
      const not = t.includes('_NOT_');
      const right: Node = t.endsWith('UNKNOWN') ? { type: 'null', value: null } : { type: 'bool', value: t.endsWith('TRUE') };
      return { type: 'binary_expr', operator: not ? 'IS NOT' : 'IS', left: lowerExpr(f.arg), right };
    }
    case 'FuncCall':
      return funcCall(f);
    case 'SubLink':
      return subLink(f);
    case 'CaseExpr': {
      const args: Node[] = list(f.args).map((w) => {
        const [, wf] = kind(w);
        return { type: 'when', cond: lowerExpr(wf.expr), result: lowerExpr(wf.result) };
      });
      if (f.defresult) args.push({ type: 'else', result: lowerExpr(f.defresult) });
      return { type: 'case', expr: f.arg ? lowerExpr(f.arg) : null, args };
    }
    case 'CoalesceExpr':
      return call('coalesce', list(f.args).map(lowerExpr));
    case 'MinMaxExpr':
      return call(f.op === 'IS_GREATEST' ? 'greatest' : 'least', list(f.args).map(lowerExpr));
    case 'NullIfExpr':
      return call('nullif', list(f.args).map(lowerExpr));
    case 'SQLValueFunction':
      return sqlValue(String(f.op));
    case 'A_ArrayExpr':
      return { type: 'array', expr_list: { type: 'expr_list', value: list(f.elements).map(lowerExpr) } };
    case 'A_Indirection': {
      const ind = list(f.indirection);
      if (ind.length !== 1) throw unsupported('this subscript');
      const [ik, iff] = kind(ind[0]);
      if (ik !== 'A_Indices' || iff.is_slice || !iff.uidx) throw unsupported(ik === 'A_Indices' ? 'array slices' : 'field selection ((x).f)');
      const base = lowerExpr(f.arg);
      return { ...base, array_index: [{ brackets: true, index: lowerExpr(iff.uidx) }] };
    }
    case 'CollateClause': {
      const names = list(f.collname).map(str);
      const base = lowerExpr(f.arg);
      return { ...base, collate: { collate: { name: { value: names[names.length - 1] } } } };
    }
    case 'SetToDefault':
      throw unsupported('DEFAULT as a value (leave the column out)');
    case 'RowExpr':
      throw unsupported('row values');
    case 'GroupingFunc':
      throw unsupported('GROUPING()');
    case 'XmlExpr':
    case 'XmlSerialize':
      throw unsupported('XML');
  }
  throw unsupported(`${k.replace(/^A_/, '')} expressions`);
}

function constant(f: Record<string, unknown>): Node {
  if (f.isnull) return { type: 'null', value: null };
  if (f.ival) {
    const v = (f.ival as { ival?: number }).ival ?? 0;
    return { type: 'number', value: v };
  }
  if (f.fval) {
    const s = String((f.fval as { fval?: string }).fval);
    // note: an integer past int4 arrives as a float constant: it stays an integer (int8) while it fits.
    if (/^-?\d+$/.test(s)) return { type: 'bigint', value: s };
    return { type: 'number', value: s };
  }
  if (f.boolval) return { type: 'bool', value: Boolean((f.boolval as { boolval?: boolean }).boolval) };
  if (f.sval) return text(String((f.sval as { sval?: string }).sval ?? ''));
  if (f.bsval) throw unsupported('bit-string constants');
  throw unsupported('this constant');
}

const call = (name: string, args: Node[], schema: string | null = null): Node => ({
  type: 'function',
  name: { name: [{ value: name }], schema: schema ? { value: schema } : null },
  args: { type: 'expr_list', value: args },
});

function sqlValue(op: string): Node {
  switch (op) {
    case 'SVFOP_CURRENT_TIMESTAMP':
      return call('current_timestamp', []);
    case 'SVFOP_LOCALTIMESTAMP':
      return call('localtimestamp', []);
    case 'SVFOP_CURRENT_DATE':
      return call('current_date', []);
  }
  throw unsupported(op.replace(/^SVFOP_/, '').toLowerCase().replaceAll('_', ' ').toUpperCase());
}

function aExpr(f: Record<string, unknown>): Node {
  const names = list(f.name).map(str);
  if (names.length !== 1) throw unsupported(`OPERATOR(${names.join('.')})`);
  const op = names[0]!;
  const left = f.lexpr ? lowerExpr(f.lexpr) : null;
  switch (f.kind) {
    case 'AEXPR_OP': {
      if (!left) {
        if (op === '-' || op === '+') return { type: 'unary_expr', operator: op, expr: lowerExpr(f.rexpr) };
        throw unsupported(`prefix operator ${op}`);
      }
      if (OPS[op]) return { type: 'binary_expr', operator: OPS[op], left, right: lowerExpr(f.rexpr) };
      return { type: 'binary_expr', operator: op, left, right: lowerExpr(f.rexpr) };
    }
    case 'AEXPR_OP_ANY':
    case 'AEXPR_OP_ALL':
      return { type: 'binary_expr', operator: op, left, right: call(f.kind === 'AEXPR_OP_ANY' ? 'any' : 'all', [lowerExpr(f.rexpr)]) };
    case 'AEXPR_DISTINCT':
      return { type: 'binary_expr', operator: 'IS DISTINCT FROM', left, right: lowerExpr(f.rexpr) };
    case 'AEXPR_NOT_DISTINCT':
      return { type: 'binary_expr', operator: 'IS NOT DISTINCT FROM', left, right: lowerExpr(f.rexpr) };
    case 'AEXPR_NULLIF':
      return call('nullif', [left!, lowerExpr(f.rexpr)]);
    case 'AEXPR_IN':
      return { type: 'binary_expr', operator: op === '<>' ? 'NOT IN' : 'IN', left, right: { type: 'expr_list', value: items(f.rexpr).map(lowerExpr) } };
    case 'AEXPR_LIKE':
    case 'AEXPR_ILIKE': {
      const right = f.rexpr;
      // note: `x LIKE p ESCAPE e` is like_escape(p, e): refused as the emitter does not read it.
      const [rk, rf] = kind(right);
      if (rk === 'FuncCall' && list(rf.funcname).map(str).join('.') === 'pg_catalog.like_escape') throw unsupported('LIKE … ESCAPE');
      return { type: 'binary_expr', operator: OPS[op] ?? op, left, right: lowerExpr(right) };
    }
    case 'AEXPR_BETWEEN':
    case 'AEXPR_NOT_BETWEEN':
      return { type: 'binary_expr', operator: f.kind === 'AEXPR_BETWEEN' ? 'BETWEEN' : 'NOT BETWEEN', left, right: { type: 'expr_list', value: items(f.rexpr).map(lowerExpr) } };
    case 'AEXPR_SIMILAR':
      throw unsupported('SIMILAR TO');
  }
  throw unsupported(`${String(f.kind).replace(/^AEXPR_/, '').replaceAll('_', ' ')} expressions`);
}

const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'jsonb_agg', 'json_agg', 'array_agg', 'string_agg', 'jsonb_object_agg', 'json_object_agg']);

function funcCall(f: Record<string, unknown>): Node {
  only('a function call', f, 'funcname,args,agg_order,agg_filter,agg_star,agg_distinct,over,func_variadic,agg_within_group');
  if (f.func_variadic) throw unsupported('VARIADIC arguments');
  let names = list(f.funcname).map(str);
  if (names.length === 2 && names[0] === 'pg_catalog') names = names.slice(1);
  if (names.length > 2) throw unsupported(`function ${names.join('.')}`);
  const schema = names.length === 2 ? names[0]! : null;
  const name = names[names.length - 1]!;
  if (f.agg_within_group) return withinGroup(f, schema, name.toLowerCase());
  const args = list(f.args).map((a) => {
    const [ak] = kind(a);
    if (ak === 'NamedArgExpr') throw unsupported('named arguments (name => value)');
    return lowerExpr(a);
  });
  const over = f.over ? windowDef(f.over as Record<string, unknown>) : null;
  if (name === 'extract' && !schema && args.length === 2 && (args[0] as Node).type === 'single_quote_string') {
    return { type: 'extract', args: { field: String(args[0]!.value).replaceAll("''", "'"), source: args[1] } };
  }
  if (name === 'timezone' && !schema && args.length === 2 && f.funcformat === 'COERCE_SQL_SYNTAX') return call('timezone', args);
  if (!schema && AGGREGATES.has(name.toLowerCase())) {
    const lname = name.toLowerCase();
    const order = list(f.agg_order);
    const pair = lname === 'jsonb_object_agg' || lname === 'json_object_agg';
    if (pair && args.length !== 2) throw new EdgeError('invalid_request', `function ${lname} takes two arguments`);
    if (lname !== 'count' && lname !== 'string_agg' && !pair && args.length !== 1) throw new EdgeError('invalid_request', `function ${lname} takes one argument`);
    if (lname === 'string_agg' && args.length !== 2) throw new EdgeError('invalid_request', 'string_agg takes two arguments');
    return {
      type: 'aggr_func',
      name: lname.toUpperCase(),
      args: {
        expr: f.agg_star ? { type: 'star', value: '*' } : args[0],
        distinct: f.agg_distinct ? 'DISTINCT' : null,
        orderby: order.length ? order.map(sortItem) : null,
        separator: lname === 'string_agg' || pair ? { delimiter: args[1] } : null,
      },
      over,
      filter: f.agg_filter ? lowerExpr(f.agg_filter) : null,
    };
  }
  if (f.agg_star || f.agg_distinct || list(f.agg_order).length || f.agg_filter) throw unsupported(`${name}() with aggregate syntax (*, DISTINCT, ORDER BY or FILTER)`);
  const out = call(name, args, schema);
  if (over) out.over = over;
  return out;
}

/**
 * `percentile_cont(f) / percentile_disc(f) / mode() WITHIN GROUP (ORDER BY x)`: an aggregate
 * over x (its order's direction kept) with the fraction beside it (calls.ts).
 */
function withinGroup(f: Record<string, unknown>, schema: string | null, name: string): Node {
  if (schema || !['percentile_cont', 'percentile_disc', 'mode'].includes(name)) throw unsupported('WITHIN GROUP');
  if (f.over) throw new EdgeError('invalid_request', `OVER is not supported for ordered-set aggregate ${name}`, { details: { sqlstate: '0A000' } });
  if (f.agg_distinct) throw unsupported('DISTINCT in an ordered-set aggregate');
  const order = list(f.agg_order).map(sortItem);
  const args = list(f.args).map(lowerExpr);
  if (order.length !== 1 || args.length !== (name === 'mode' ? 0 : 1)) throw new EdgeError('invalid_request', `function ${name} with these arguments does not exist`, { details: { sqlstate: '42883' } });
  return { type: 'aggr_func', name: name.toUpperCase(), args: { expr: order[0]!.expr, fraction: args[0] ?? null, desc: order[0]!.type === 'DESC' }, over: null, filter: f.agg_filter ? lowerExpr(f.agg_filter) : null };
}

/** FRAMEOPTION_DEFAULTS: RANGE UNBOUNDED PRECEDING … CURRENT ROW, what an OVER without a frame means. */
const DEFAULT_FRAME = 1058;

/** Postgres' FRAMEOPTION_* bits (nodes/parsenodes.h). */
const FRAME = { RANGE: 0x2, ROWS: 0x4, GROUPS: 0x8, START_UNBOUNDED_PRECEDING: 0x20, END_UNBOUNDED_FOLLOWING: 0x100, START_CURRENT_ROW: 0x200, END_CURRENT_ROW: 0x400, START_PRECEDING: 0x800, END_PRECEDING: 0x1000, START_FOLLOWING: 0x2000, END_FOLLOWING: 0x4000, EXCLUDE_CURRENT_ROW: 0x8000, EXCLUDE_GROUP: 0x10000, EXCLUDE_TIES: 0x20000 };

/** A frame clause (`ROWS BETWEEN 1 PRECEDING AND CURRENT ROW`, …) as SQLite writes it; offsets are expressions. Null: the default frame. */
function frameClause(w: Record<string, unknown>): Node | null {
  const o = Number(w.frameOptions ?? DEFAULT_FRAME);
  if (o === DEFAULT_FRAME) return null;
  const mode = o & FRAME.ROWS ? 'ROWS' : o & FRAME.GROUPS ? 'GROUPS' : 'RANGE';
  const bound = (which: 'START' | 'END'): Node => {
    const bit = (k: string): boolean => Boolean(o & (FRAME as Record<string, number>)[`${which}_${k}`]!);
    if (which === 'START' && bit('UNBOUNDED_PRECEDING')) return { bound: 'UNBOUNDED PRECEDING' };
    if (which === 'END' && bit('UNBOUNDED_FOLLOWING')) return { bound: 'UNBOUNDED FOLLOWING' };
    if (bit('CURRENT_ROW')) return { bound: 'CURRENT ROW' };
    const offset = lowerExpr(which === 'START' ? w.startOffset : w.endOffset);
    if (bit('PRECEDING')) return { bound: 'PRECEDING', offset };
    if (bit('FOLLOWING')) return { bound: 'FOLLOWING', offset };
    throw unsupported('this window frame');
  };
  const exclude = o & FRAME.EXCLUDE_CURRENT_ROW ? 'CURRENT ROW' : o & FRAME.EXCLUDE_GROUP ? 'GROUP' : o & FRAME.EXCLUDE_TIES ? 'TIES' : null;
  return { mode, start: bound('START'), end: bound('END'), exclude };
}

function windowDef(w: Record<string, unknown>): Node {
  if (w.name || w.refname) throw unsupported('named windows');
  return {
    as_window_specification: {
      window_specification: {
        partitionby: list(w.partitionClause).map((p) => ({ expr: lowerExpr(p) })),
        orderby: list(w.orderClause).map(sortItem),
        window_frame_clause: frameClause(w),
      },
    },
  };
}

function subLink(f: Record<string, unknown>): Node {
  const ast = lowerSelect(f.subselect);
  switch (f.subLinkType) {
    case 'EXISTS_SUBLINK':
      return { type: 'unary_expr', operator: 'EXISTS', expr: { ast } };
    case 'EXPR_SUBLINK':
      return { ast };
    case 'ANY_SUBLINK': {
      const op = list(f.operName).map(str);
      if (op.length && (op.length !== 1 || op[0] !== '=')) throw unsupported(`${op.join('.')} ANY (subquery): write IN (subquery) or EXISTS`);
      return { type: 'binary_expr', operator: 'IN', left: lowerExpr(f.testexpr), right: { type: 'expr_list', value: [{ ast }] } };
    }
    case 'ALL_SUBLINK':
      throw unsupported('ALL (subquery): write NOT EXISTS');
    case 'ARRAY_SUBLINK':
      throw unsupported('ARRAY (subquery)');
  }
  throw unsupported(`${String(f.subLinkType).replace(/_SUBLINK$/, '')} subqueries`);
}
