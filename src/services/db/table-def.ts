import { invalidField } from '../../core/errors.js';
import { JSON_KEY } from '../../sql/quote.js';
import { toStored } from './column-values.js';
import { COLUMN_TYPES, type ColumnDef, type ColumnType, type IndexDef, type OnDelete, type TableDef, type TableInfo } from '../../sql/table-model.js';

export const NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const RESERVED_COLUMNS = new Set(['id', 'data', 'created_at', 'updated_at', 'rowid', 'oid', '_rowid_']);
const ON_DELETE: readonly OnDelete[] = ['cascade', 'set null', 'restrict', 'no action'];
const MAX_COLUMNS = 200;
const MAX_INDEXES = 32;

/** Whether a table name is valid and not reserved by the platform. */
export const validTableName = (n: unknown): n is string =>
  typeof n === 'string' && NAME.test(n) && !n.startsWith('_svc') && !n.startsWith('sqlite_') && !n.startsWith('pg_');

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Validates a `POST /db/tables` body into a table definition. `lookup` finds existing
 * tables for foreign keys. Throws 400 `invalid_field` naming the offending field.
 */
export function parseTableBody(body: Obj, lookup: (name: string) => TableInfo | undefined, now: string): TableDef {
  const { name, type = 'document', columns = [], indexes = [] } = body;
  for (const k of Object.keys(body)) {
    if (!['name', 'type', 'columns', 'indexes'].includes(k)) throw invalidField(k, 'unknown field');
  }
  if (!validTableName(name)) throw invalidField('name', 'must match [a-z_][a-z0-9_]{0,62} and not start with _svc, sqlite_ or pg_');
  if (type !== 'document' && type !== 'relational') throw invalidField('type', 'must be "document" or "relational"');
  if (!Array.isArray(columns) || columns.length > MAX_COLUMNS) throw invalidField('columns', `must be an array of at most ${MAX_COLUMNS}`);
  if (type === 'document' && columns.length > 0) throw invalidField('columns', 'a document table has no columns (its fields live in data)');
  const cols: ColumnDef[] = columns.map((c, i) => parseColumn(c, i, lookup));
  const seen = new Set<string>();
  for (const c of cols) {
    if (seen.has(c.name)) throw invalidField(`columns.${c.name}`, 'is defined twice');
    seen.add(c.name);
  }
  if (!Array.isArray(indexes) || indexes.length > MAX_INDEXES) throw invalidField('indexes', `must be an array of at most ${MAX_INDEXES}`);
  const def: TableDef = { name, kind: type, columns: cols, indexes: [], created_at: now };
  def.indexes = indexes.map((ix, i) => parseIndex(ix, i, def, seen));
  return def;
}

function parseColumn(c: unknown, i: number, lookup: (name: string) => TableInfo | undefined): ColumnDef {
  const at = `columns[${i}]`;
  if (!isObj(c)) throw invalidField(at, 'must be an object');
  for (const k of Object.keys(c)) {
    if (!['name', 'type', 'nullable', 'default', 'unique', 'references'].includes(k)) throw invalidField(`${at}.${k}`, 'unknown field');
  }
  const { name, type, nullable = true, unique = false, references = null } = c;
  if (typeof name !== 'string' || !NAME.test(name)) throw invalidField(`${at}.name`, 'must match [a-z_][a-z0-9_]{0,62}');
  if (RESERVED_COLUMNS.has(name)) throw invalidField(`${at}.name`, `"${name}" is reserved`);
  if (!(COLUMN_TYPES as readonly unknown[]).includes(type)) throw invalidField(`${at}.type`, `must be one of ${COLUMN_TYPES.join(', ')}`);
  if (typeof nullable !== 'boolean') throw invalidField(`${at}.nullable`, 'must be a boolean');
  if (typeof unique !== 'boolean') throw invalidField(`${at}.unique`, 'must be a boolean');
  const col: ColumnDef = { name, type: type as ColumnType, nullable, unique, default: null, references: null };
  const dflt = c.default;
  if (dflt !== undefined && dflt !== null) {
    if (type === 'timestamptz' && dflt === 'now()') col.default = 'now()';
    else {
      try {
        toStored({ ...col, nullable: false }, dflt);
      } catch {
        throw invalidField(`${at}.default`, `is not a valid ${String(type)} value`);
      }
      col.default = dflt;
    }
  }
  if (references !== null) col.references = parseRef(references, `${at}.references`, col, lookup);
  return col;
}

function parseRef(r: unknown, at: string, col: ColumnDef, lookup: (name: string) => TableInfo | undefined): ColumnDef['references'] {
  if (!isObj(r)) throw invalidField(at, 'must be an object {table, column, on_delete}');
  const { table, column = 'id', on_delete = 'no action' } = r;
  if (typeof table !== 'string' || !lookup(table)) throw invalidField(`${at}.table`, 'must name an existing table');
  const target = lookup(table)!;
  const tcol = column === 'id' ? null : target.cols.get(String(column));
  if (column !== 'id' && !(tcol && tcol.unique)) throw invalidField(`${at}.column`, 'must be id or a unique column of that table');
  const ttype = tcol ? tcol.type : 'uuid';
  const compatible = ttype === col.type || (['uuid', 'text'].includes(ttype) && ['uuid', 'text'].includes(col.type));
  if (!compatible) throw invalidField(at, `column type ${col.type} does not match the referenced ${ttype}`);
  const od = typeof on_delete === 'string' ? on_delete.toLowerCase() : on_delete;
  if (!(ON_DELETE as readonly unknown[]).includes(od)) throw invalidField(`${at}.on_delete`, `must be one of ${ON_DELETE.join(', ')}`);
  if (od === 'set null' && !col.nullable) throw invalidField(`${at}.on_delete`, 'set null needs a nullable column');
  return { table, column: String(column), on_delete: od as OnDelete };
}

function parseIndex(ix: unknown, i: number, def: TableDef, names: Set<string>): IndexDef {
  const at = `indexes[${i}]`;
  if (!isObj(ix)) throw invalidField(at, 'must be an object {columns, unique}');
  const { columns, unique = false } = ix;
  if (!Array.isArray(columns) || columns.length === 0 || columns.length > 8) throw invalidField(`${at}.columns`, 'must list 1 to 8 columns');
  if (typeof unique !== 'boolean') throw invalidField(`${at}.unique`, 'must be a boolean');
  for (const c of columns) {
    if (typeof c !== 'string') throw invalidField(`${at}.columns`, 'must be strings');
    if (def.kind === 'document') {
      const segs = c.startsWith('data.') ? c.slice(5).split('.') : c.split('.');
      if (segs.length > 16 || !segs.every((s) => JSON_KEY.test(s))) throw invalidField(`${at}.columns`, `"${c}" is not a valid JSON path`);
    } else if (!names.has(c) && !['created_at', 'updated_at'].includes(c)) {
      throw invalidField(`${at}.columns`, `"${c}" is not a column`);
    }
  }
  const cols = def.kind === 'document' ? columns.map((c: string) => (c.startsWith('data.') ? c.slice(5) : c)) : columns;
  return { columns: cols as string[], unique };
}
