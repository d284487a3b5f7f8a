import { unsupported, type Node } from './emit.js';
import { kind, only, str } from './lower.js';

/**
 * Reads `CREATE TYPE … AS ENUM`, `ALTER TYPE … ADD VALUE`, `DROP TYPE` and `COMMENT ON`
 * from PostgreSQL's parse tree into the emitter's statement tree (types-ddl.ts makes their steps).
 */

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** `[public.]name` of a type or table: the name, or a 400 naming the schema. */
export function publicName(parts: string[], what: string): string {
  if (parts.length === 2 && parts[0] === 'public') return parts[1]!;
  if (parts.length !== 1) throw unsupported(`${what} ${parts.join('.')} (only the public schema)`);
  return parts[0]!;
}

export function lowerTypeStmt(k: string, f: Record<string, unknown>): Node {
  switch (k) {
    case 'CreateEnumStmt':
      only('CREATE TYPE … AS ENUM', f, 'typeName,vals');
      return { type: 'pe_create_enum', name: publicName(list(f.typeName).map(str), 'type'), labels: list(f.vals).map(str) };
    case 'AlterEnumStmt': {
      only('ALTER TYPE', f, 'typeName,newVal,newValNeighbor,newValIsAfter,skipIfNewValExists,oldVal');
      if (f.oldVal !== undefined) throw unsupported('ALTER TYPE … RENAME VALUE');
      return {
        type: 'pe_alter_enum',
        name: publicName(list(f.typeName).map(str), 'type'),
        label: String(f.newVal ?? ''),
        neighbor: typeof f.newValNeighbor === 'string' ? f.newValNeighbor : null,
        after: f.newValIsAfter === true,
        ifNotExists: f.skipIfNewValExists === true,
      };
    }
    case 'DropType': {
      if (f.behavior === 'DROP_CASCADE') throw unsupported('DROP TYPE … CASCADE');
      const names = list(f.objects).map((o) => {
        const [, tf] = kind(o);
        return publicName(list(tf.names).map(str), 'type');
      });
      return { type: 'pe_drop_enum', names, ifExists: f.missing_ok === true };
    }
    case 'CommentStmt': {
      only('COMMENT ON', f, 'objtype,object,comment');
      const parts = list(kind(f.object)[1].items).map(str);
      let table: string;
      let column: string | null = null;
      if (f.objtype === 'OBJECT_TABLE' || f.objtype === 'OBJECT_VIEW') table = publicName(parts, f.objtype === 'OBJECT_VIEW' ? 'view' : 'table');
      else if (f.objtype === 'OBJECT_COLUMN') {
        if (parts.length < 2) throw unsupported('COMMENT ON COLUMN without a table');
        column = parts[parts.length - 1]!;
        table = publicName(parts.slice(0, -1), 'table');
      } else throw unsupported(`COMMENT ON ${String(f.objtype).replace(/^OBJECT_/, '')} (tables, views and columns only)`);
      return { type: 'pe_comment', table, column, view: f.objtype === 'OBJECT_VIEW', comment: typeof f.comment === 'string' ? f.comment : null };
    }
  }
  throw unsupported(k);
}
