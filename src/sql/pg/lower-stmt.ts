import { EdgeError } from '../../core/errors.js';
import { PRIMARY_KEY_MARK, unsupported, type Node } from './emit.js';
import { fromList, kind, lowerExpr, lowerSelect, only, rangeVar, str, typeNode, withList } from './lower.js';
import { type ParsedStatement } from './parse.js';
import { lowerDefaultPrivileges, lowerGrant } from './grant.js';
import { lowerTypeStmt } from './types-ddl-lower.js';
import { lowerAlterView, lowerDropView, lowerView } from './views.js';
import { lowerAlterPolicy, lowerCreatePolicy, lowerDropPolicy, lowerRenamePolicy } from './policy-stmt.js';
import { lowerCreateFunction, lowerCreateTrigger, lowerDropRoutine } from './triggers.js';

/**
 * Reads one statement of PostgreSQL's parse tree into the emitter's statement tree
 * (statements.ts). Every statement type and field is listed: anything else is a 400
 * `unsupported_sql` naming it.
 */

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Statements that reach SQLite's files, settings or extensions: never run for any caller. */
export const NEVER_ALLOWED = new Set(['ATTACH', 'DETACH', 'PRAGMA', 'VACUUM', 'REINDEX', 'ANALYZE']);

export const neverAllowed = (word: string): EdgeError =>
  new EdgeError('unsupported_sql', `${word} statements are never allowed: they reach SQLite's files, settings or extensions, which each project's database does not expose`, {
    details: { construct: word },
  });

/** Postgres' statements of the same kind (by node type). */
const REFUSED: Record<string, string> = { VacuumStmt: 'VACUUM', ReindexStmt: 'REINDEX' };

export function lowerStatement(s: ParsedStatement): Node {
  const [k, f] = kind(s.node);
  switch (k) {
    case 'SelectStmt':
      return topWith(lowerSelect(s.node));
    case 'InsertStmt':
      return topWith(insert(f));
    case 'UpdateStmt':
      return topWith(update(f));
    case 'DeleteStmt':
      return topWith(del(f));
    case 'CreateStmt':
      return createTable(f);
    case 'IndexStmt':
      return createIndex(f);
    case 'AlterTableStmt':
      return alterTable(f);
    case 'RenameStmt':
      return rename(f);
    case 'DropStmt':
      return drop(f);
    case 'CreateExtensionStmt':
      only('CREATE EXTENSION', f, 'extname,if_not_exists,options');
      // note: `WITH SCHEMA extensions` (Supabase's habit) names where the functions live; they are built in here.
      for (const o of list(f.options)) if (kind(o)[1].defname !== 'schema') throw unsupported(`CREATE EXTENSION … ${String(kind(o)[1].defname).toUpperCase()}`);
      return { type: 'create', keyword: 'extension', extension: { value: String(f.extname) }, if_not_exists: Boolean(f.if_not_exists) };
    case 'TransactionStmt':
      return { type: 'transaction' };
    case 'CreatePolicyStmt':
      return lowerCreatePolicy(f, s.text);
    case 'AlterPolicyStmt':
      return lowerAlterPolicy(f, s.text);
    case 'GrantStmt':
      return lowerGrant(f);
    case 'AlterDefaultPrivilegesStmt':
      return lowerDefaultPrivileges(f);
    case 'CreateEnumStmt':
    case 'AlterEnumStmt':
    case 'CommentStmt':
      return lowerTypeStmt(k, f);
    case 'ViewStmt':
      return lowerView(f, s.text);
    case 'CreateFunctionStmt':
      return lowerCreateFunction(f, s);
    case 'CreateTrigStmt':
      return lowerCreateTrigger(f);
  }
  if (REFUSED[k]) throw neverAllowed(/^\s*analy[sz]e/i.test(s.text) ? 'ANALYZE' : REFUSED[k]);
  throw unsupported(`${statementName(k)} statements`);
}

/** The data-modifying items of a statement's own WITH (Postgres allows them only there: dml-cte.ts). */
function topWith(n: Node): Node {
  for (const w of Array.isArray(n.with) ? (n.with as Node[]) : []) {
    if (!w.dmlRaw) continue;
    const [k, f] = kind(w.dmlRaw);
    if (f.withClause) throw unsupported('WITH inside a data-modifying WITH item');
    w.dml = k === 'InsertStmt' ? insert(f) : k === 'UpdateStmt' ? update(f) : del(f);
    delete w.dmlRaw;
  }
  return n;
}

const NAMES: Record<string, string> = {
  ViewStmt: 'CREATE VIEW',
  CreateTrigStmt: 'CREATE TRIGGER',
  DoStmt: 'DO',
  ExplainStmt: 'EXPLAIN',
  CreateTableAsStmt: 'CREATE TABLE … AS',
  CreateSeqStmt: 'CREATE SEQUENCE',
  CreateSchemaStmt: 'CREATE SCHEMA',
  CreateRoleStmt: 'CREATE ROLE',
};

/** `CreateFunctionStmt` → `CREATE FUNCTION`. */
const statementName = (k: string): string =>
  NAMES[k] ??
  k
    .replace(/Stmt$/, '')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toUpperCase();

function returning(f: Record<string, unknown>): Node | null {
  const r = f.returningClause as Record<string, unknown> | undefined;
  if (!r) return null;
  only('RETURNING', r, 'exprs');
  return { columns: list(r.exprs).map(target) };
}

function target(t: unknown): Node {
  const [, tf] = kind(t);
  only('a RETURNING item', tf, 'val,name');
  return { expr: lowerExpr(tf.val), as: typeof tf.name === 'string' ? tf.name : null };
}

function setItem(t: unknown): Node {
  const [, tf] = kind(t);
  if (list(tf.indirection).length) throw unsupported('assignments to subscripts or fields');
  only('a SET item', tf, 'val,name');
  const [vk] = kind(tf.val);
  if (vk === 'SetToDefault') throw unsupported('SET col = DEFAULT');
  if (vk === 'MultiAssignRef') throw unsupported('SET (a, b) = …');
  return { column: String(tf.name), value: lowerExpr(tf.val) };
}

function insert(f: Record<string, unknown>): Node {
  only('INSERT', f, 'relation,cols,selectStmt,onConflictClause,returningClause,override,withClause');
  if (f.override && f.override !== 'OVERRIDING_NOT_SET') throw unsupported('OVERRIDING … VALUE');
  const out: Node = { type: 'insert', table: [rangeVar(f.relation as Record<string, unknown>)] };
  if (f.withClause) out.with = withList(f.withClause);
  out.columns = list(f.cols).map((c) => {
    const [, cf] = kind(c);
    if (list(cf.indirection).length) throw unsupported('INSERT into subscripts or fields');
    return String(cf.name);
  });
  if (!f.selectStmt) throw unsupported('INSERT … DEFAULT VALUES');
  const [, sf] = kind(f.selectStmt);
  const rows = list(sf.valuesLists);
  const plainValues = rows.length && !sf.sortClause && !sf.limitCount && !sf.limitOffset && !sf.withClause;
  if (plainValues) {
    out.values = {
      type: 'values',
      values: rows.map((row) => ({
        value: list(kind(row)[1].items).map((v) => {
          if (kind(v)[0] === 'SetToDefault') throw unsupported('DEFAULT in VALUES (leave the column out)');
          return lowerExpr(v);
        }),
      })),
    };
  } else out.values = lowerSelect(f.selectStmt);
  const c = f.onConflictClause as Record<string, unknown> | undefined;
  if (c) {
    only('ON CONFLICT', c, 'action,infer,targetList,whereClause');
    const infer = c.infer as Record<string, unknown> | undefined;
    if (infer) only('an ON CONFLICT target', infer, 'indexElems');
    const targetCols = list(infer?.indexElems).map((e) => {
      const [, ef] = kind(e);
      if (!ef.name) throw unsupported('ON CONFLICT on an expression');
      return { type: 'column_ref', column: String(ef.name) };
    });
    const action: Node =
      c.action === 'ONCONFLICT_NOTHING'
        ? { type: 'origin', value: 'nothing' }
        : { type: 'update', set: list(c.targetList).map(setItem), where: c.whereClause ? lowerExpr(c.whereClause) : null };
    out.conflict = { target: targetCols.length ? { expr: targetCols } : null, action: { expr: action } };
  }
  const ret = returning(f);
  if (ret) out.returning = ret;
  return out;
}

function update(f: Record<string, unknown>): Node {
  only('UPDATE', f, 'relation,targetList,whereClause,fromClause,returningClause,withClause');
  const out: Node = { type: 'update', table: [rangeVar(f.relation as Record<string, unknown>)], set: list(f.targetList).map(setItem) };
  if (f.withClause) out.with = withList(f.withClause);
  if (list(f.fromClause).length) out.from = fromList(list(f.fromClause));
  if (f.whereClause) out.where = lowerExpr(f.whereClause);
  const ret = returning(f);
  if (ret) out.returning = ret;
  return out;
}

function del(f: Record<string, unknown>): Node {
  only('DELETE', f, 'relation,whereClause,returningClause,usingClause,withClause');
  if (list(f.usingClause).length) throw unsupported('DELETE … USING');
  const out: Node = { type: 'delete', from: [rangeVar(f.relation as Record<string, unknown>)] };
  if (f.withClause) out.with = withList(f.withClause);
  if (f.whereClause) out.where = lowerExpr(f.whereClause);
  const ret = returning(f);
  if (ret) out.returning = ret;
  return out;
}

const FK_ACTIONS: Record<string, string> = { a: 'no action', r: 'restrict', c: 'cascade', n: 'set null', d: 'set default' };

function references(c: Record<string, unknown>): Node {
  const pk = c.pktable as Record<string, unknown>;
  const cols = list(c.pk_attrs).map(str);
  const on_action: Node[] = [];
  for (const [key, label] of [
    ['fk_del_action', 'on delete'],
    ['fk_upd_action', 'on update'],
  ] as const) {
    const a = FK_ACTIONS[String(c[key] ?? 'a')];
    if (!a) throw unsupported(`${label} action ${String(c[key])}`);
    if (a !== 'no action') on_action.push({ type: label, value: { value: a } });
  }
  if (c.fk_matchtype && c.fk_matchtype !== 's') throw unsupported('MATCH FULL / MATCH PARTIAL');
  if (c.deferrable) throw unsupported('deferrable constraints');
  return {
    table: [{ db: typeof pk.schemaname === 'string' ? pk.schemaname : null, table: String(pk.relname) }],
    // note: no column list means the referenced table's primary key (statements.ts reads the mark).
    definition: (cols.length ? cols : [PRIMARY_KEY_MARK]).map((x) => ({ type: 'column_ref', column: x })),
    on_action,
  };
}

/** A column definition (CREATE TABLE, ALTER TABLE … ADD COLUMN); `always` is set by GENERATED ALWAYS AS IDENTITY. */
function columnDef(f: Record<string, unknown>, table: string, mark: { always: boolean }): Node {
  only('a column definition', f, 'colname,typeName,constraints,is_local,collClause');
  if (f.collClause) throw unsupported('COLLATE on a column');
  const name = String(f.colname);
  const out: Node = { resource: 'column', column: { type: 'column_ref', column: name }, definition: typeNode(f.typeName as Record<string, unknown>) };
  const checks: Node[] = [];
  for (const c of list(f.constraints)) {
    const [, cf] = kind(c);
    switch (cf.contype) {
      case 'CONSTR_NOTNULL':
        out.nullable = { type: 'not null' };
        break;
      case 'CONSTR_NULL':
        break;
      case 'CONSTR_PRIMARY':
        out.primary_key = 'primary key';
        break;
      case 'CONSTR_UNIQUE':
        out.unique = 'unique';
        break;
      case 'CONSTR_DEFAULT':
        out.default_val = { value: lowerExpr(cf.raw_expr) };
        break;
      case 'CONSTR_CHECK':
        checks.push(lowerExpr(cf.raw_expr));
        // note: a declared name is kept; an undeclared one gets Postgres' name (t_col_check, numbered when
        // taken) where a violation is worded (src/sql/pg/violations.ts), from the whole table's checks.
        out.check = typeof cf.conname === 'string' ? { definition: checks, name: cf.conname } : { definition: checks };
        break;
      case 'CONSTR_FOREIGN':
        out.reference_definition = references(cf);
        break;
      case 'CONSTR_IDENTITY':
        out.generated_by_default = true;
        if (cf.generated_when === 'a') mark.always = true;
        break;
      case 'CONSTR_GENERATED':
        throw unsupported('generated columns (GENERATED ALWAYS AS (…) STORED)');
      default:
        throw unsupported(`column constraint ${String(cf.contype).replace(/^CONSTR_/, '')}`);
    }
  }
  if (checks.length > 1) throw unsupported('several CHECK constraints on one column (write one, with AND)');
  return out;
}

function createTable(f: Record<string, unknown>): Node {
  only('CREATE TABLE', f, 'relation,tableElts,if_not_exists,oncommit');
  const rel = f.relation as Record<string, unknown>;
  if (rel.relpersistence === 't') throw unsupported('temporary tables');
  if (rel.relpersistence === 'u') throw unsupported('unlogged tables');
  const t = rangeVar(rel);
  const mark = { always: false };
  const defs = list(f.tableElts).map((e) => {
    const [ek, ef] = kind(e);
    if (ek === 'ColumnDef') return columnDef(ef, String(t.table), mark);
    if (ek === 'Constraint') return tableConstraint(ef);
    if (ek === 'TableLikeClause') throw unsupported('CREATE TABLE … LIKE');
    throw unsupported(`${ek} in CREATE TABLE`);
  });
  const out: Node = { type: 'create', keyword: 'table', table: [t], create_definitions: defs, if_not_exists: Boolean(f.if_not_exists) };
  if (mark.always) out.pe_identity_always = true;
  return out;
}

function tableConstraint(c: Record<string, unknown>): Node {
  const keys = list(c.keys).map((k) => ({ type: 'column_ref', column: str(k) }));
  const base: Node = { resource: 'constraint', constraint: typeof c.conname === 'string' ? c.conname : null };
  switch (c.contype) {
    case 'CONSTR_PRIMARY':
      return { ...base, constraint_type: 'primary key', definition: keys };
    case 'CONSTR_UNIQUE':
      return { ...base, constraint_type: 'unique', definition: keys };
    case 'CONSTR_CHECK':
      return { ...base, constraint_type: 'check', definition: [lowerExpr(c.raw_expr)] };
    case 'CONSTR_FOREIGN':
      return { ...base, constraint_type: 'foreign key', definition: list(c.fk_attrs).map((k) => ({ type: 'column_ref', column: str(k) })), reference_definition: references(c) };
  }
  throw unsupported(`table constraint ${String(c.contype).replace(/^CONSTR_/, '')}`);
}

function createIndex(f: Record<string, unknown>): Node {
  only('CREATE INDEX', f, 'idxname,relation,accessMethod,indexParams,whereClause,unique,if_not_exists');
  const rel = rangeVar(f.relation as Record<string, unknown>);
  return {
    type: 'create',
    keyword: 'index',
    table: rel,
    index: typeof f.idxname === 'string' ? f.idxname : null,
    index_using: { type: String(f.accessMethod ?? 'btree') },
    index_type: f.unique ? 'unique' : null,
    if_not_exists: Boolean(f.if_not_exists),
    where: f.whereClause ? lowerExpr(f.whereClause) : null,
    index_columns: list(f.indexParams).map((p) => {
      const [, pf] = kind(p);
      only('an index column', pf, 'name,expr,ordering,nulls_ordering,opclass');
      if (pf.nulls_ordering && pf.nulls_ordering !== 'SORTBY_NULLS_DEFAULT') throw unsupported('NULLS FIRST/LAST in an index');
      const dir = pf.ordering === 'SORTBY_DESC' ? 'DESC' : null;
      const e: Node = pf.name ? { type: 'column_ref', column: String(pf.name) } : lowerExpr(pf.expr);
      if (list(pf.opclass).length) e.pe_opclass = list(pf.opclass).map(str).join('.');
      return dir ? { ...e, order_by: dir } : e;
    }),
  };
}

function alterTable(f: Record<string, unknown>): Node {
  if (f.objtype === 'OBJECT_VIEW') return lowerAlterView(f);
  only('ALTER TABLE', f, 'relation,cmds,objtype,missing_ok');
  if (f.objtype !== 'OBJECT_TABLE') throw unsupported(`ALTER ${String(f.objtype).replace(/^OBJECT_/, '')}`);
  // note: `ALTER TABLE ONLY t` (pg_dump's and Supabase's generated migrations) is `ALTER TABLE t`: no table here has children.
  const rel = rangeVar({ ...(f.relation as Record<string, unknown>), inh: true });
  const cmds = list(f.cmds);
  const COLUMN_CHANGES = ['AT_ColumnDefault', 'AT_SetNotNull', 'AT_DropNotNull', 'AT_AlterColumnType'];
  if (cmds.length > 1 && !f.missing_ok && cmds.every((x) => COLUMN_CHANGES.includes(String(kind(x)[1].subtype)))) {
    // note: `alter table t alter a set not null, alter b set default …`: the column changes one after another.
    const one = (x: unknown) => (alterTable({ ...f, cmds: [x] }).expr as Node[])[0]!;
    return { type: 'alter', keyword: 'table', table: [rel], expr: cmds.map(one) };
  }
  if (cmds.length !== 1) throw unsupported('several ALTER TABLE actions in one statement');
  const [, c] = kind(cmds[0]);
  // note: IF EXISTS is read for the RLS switch only (which names a missing table as an error here).
  if (f.missing_ok && c.subtype !== 'AT_EnableRowSecurity' && c.subtype !== 'AT_DisableRowSecurity') throw unsupported('ALTER TABLE IF EXISTS');
  switch (c.subtype) {
    case 'AT_EnableRowSecurity':
    case 'AT_DisableRowSecurity':
      if (rel.db !== null && String(rel.db) !== 'public') throw unsupported(`schema "${String(rel.db)}"`);
      return { type: 'pe_rls', table: rel.table, enable: c.subtype === 'AT_EnableRowSecurity' };
    case 'AT_ForceRowSecurity':
    case 'AT_NoForceRowSecurity':
      throw unsupported(`ALTER TABLE … ${c.subtype === 'AT_ForceRowSecurity' ? 'FORCE' : 'NO FORCE'} ROW LEVEL SECURITY`);
    case 'AT_AddColumn': {
      if (c.missing_ok) throw unsupported('ADD COLUMN IF NOT EXISTS');
      const mark = { always: false };
      const col = columnDef(kind(c.def)[1], String(rel.table), mark);
      if (mark.always) throw unsupported('identity columns other than the primary key');
      return { type: 'alter', keyword: 'table', table: [rel], expr: [{ ...col, action: 'add' }] };
    }
    case 'AT_ColumnDefault':
    case 'AT_SetNotNull':
    case 'AT_DropNotNull':
    case 'AT_AlterColumnType': {
      // note: the column changes of docs/sql.md "Changing a column" (src/sql/pg/alter-column.ts).
      const a: Node = { action: 'alter_column', resource: 'column', column: { type: 'column_ref', column: String(c.name) } };
      if (c.subtype === 'AT_ColumnDefault') a.default_val = c.def ? { value: lowerExpr(c.def) } : null;
      else if (c.subtype !== 'AT_AlterColumnType') a.not_null = c.subtype === 'AT_SetNotNull';
      else {
        const [, d] = kind(c.def);
        only('ALTER COLUMN … TYPE', d, 'typeName,raw_default,location');
        a.definition = typeNode(d.typeName as Record<string, unknown>);
        if (d.raw_default) a.using = lowerExpr(d.raw_default);
      }
      return { type: 'alter', keyword: 'table', table: [rel], expr: [a] };
    }
    case 'AT_DropColumn':
      if (c.behavior === 'DROP_CASCADE') throw unsupported('DROP COLUMN … CASCADE');
      if (c.missing_ok) throw unsupported('DROP COLUMN IF EXISTS');
      return { type: 'alter', keyword: 'table', table: [rel], expr: [{ action: 'drop', resource: 'column', column: { type: 'column_ref', column: String(c.name) } }] };
  }
  throw unsupported(`ALTER TABLE … ${String(c.subtype).replace(/^AT_/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase()}`);
}

function rename(f: Record<string, unknown>): Node {
  if (f.renameType === 'OBJECT_POLICY') return lowerRenamePolicy(f);
  const rel = rangeVar(f.relation as Record<string, unknown>);
  if (f.missing_ok) throw unsupported('ALTER TABLE IF EXISTS');
  if (f.renameType === 'OBJECT_COLUMN' && f.relationType === 'OBJECT_TABLE') {
    return { type: 'alter', keyword: 'table', table: [rel], expr: [{ action: 'rename', resource: 'column', old_column: { column: String(f.subname) }, column: { column: String(f.newname) } }] };
  }
  if (f.renameType === 'OBJECT_TABLE') return { type: 'alter', keyword: 'table', table: [rel], expr: [{ action: 'rename', resource: 'table', table: String(f.newname) }] };
  throw unsupported(`ALTER ${String(f.renameType).replace(/^OBJECT_/, '')} … RENAME`);
}

function drop(f: Record<string, unknown>): Node {
  if (f.removeType === 'OBJECT_POLICY') return lowerDropPolicy(f);
  only('DROP', f, 'objects,removeType,behavior,missing_ok,concurrent');
  if (f.concurrent) throw unsupported('DROP INDEX CONCURRENTLY');
  const names = list(f.objects).map((o) => list(kind(o)[1].items).map(str));
  const prefix = f.missing_ok ? 'IF EXISTS' : null;
  const cascade = f.behavior === 'DROP_CASCADE' ? 'cascade' : null;
  const qualified = (parts: string[]) => {
    if (parts.length > 2) throw unsupported(`the name ${parts.join('.')}`);
    return parts.length === 2 ? { db: parts[0], table: parts[1] } : { db: null, table: parts[0] };
  };
  if (f.removeType === 'OBJECT_VIEW') return lowerDropView(f);
  if (f.removeType === 'OBJECT_TABLE') return { type: 'drop', keyword: 'table', prefix, name: names.map((p) => ({ ...qualified(p), as: cascade })) };
  if (f.removeType === 'OBJECT_TYPE') return lowerTypeStmt('DropType', f);
  if (f.removeType === 'OBJECT_INDEX') {
    if (cascade) throw unsupported('DROP INDEX … CASCADE');
    return { type: 'drop', keyword: 'index', prefix, name: names.map((p) => ({ type: 'column_ref', ...((q) => ({ table: q.db, column: q.table }))(qualified(p)) })) };
  }
  const routine = lowerDropRoutine(f);
  if (routine) return routine;
  throw unsupported(`DROP ${String(f.removeType).replace(/^OBJECT_/, '').replaceAll('_', ' ')}`);
}


