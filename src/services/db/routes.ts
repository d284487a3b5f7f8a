import { EdgeError } from '../../core/errors.js';
import { parseJsonObject } from '../../edge/json-body.js';
import { json, noContent, route, type EdgeResponse, type HandlerRequest, type ProjectCtx, type RouteDef } from '../../edge/route.js';
import type { DbService } from './db.js';
import { lines } from './ndjson.js';

type Body = Record<string, unknown>;
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
/** A body the service already serialized (rows spliced from stored JSON). */
const jsonText = (text: string, status = 200): EdgeResponse => ({ status, bytes: text, headers: JSON_TYPE });
/** A table's rows are read at once; a view's (docs/api.md "Views") through the SQL worker pool. */
const textOrLater = (out: string | Promise<string>): EdgeResponse | Promise<EdgeResponse> => (typeof out === 'string' ? jsonText(out) : out.then((t) => jsonText(t)));

/**
 * The database endpoints (docs/api.md "Database"). Reads need
 * `data:read`, row writes `data:write`; table DDL and RLS writes need the service
 * role (service key or operator session). A Bearer token, when sent, makes RLS
 * policies see the user.
 */
export function dbRoutes(db: DbService): RouteDef[] {
  return [
    route({ method: 'GET', path: '/db/schema', auth: 'key', scope: 'data:read', handler: (_r, c) => json(db.schema(c.project)) }),
    route({ method: 'GET', path: '/db/tables', auth: 'key', scope: 'data:read', handler: (_r, c) => json(db.listTables(c.project)) }),
    route({
      method: 'POST',
      path: '/db/tables',
      auth: 'key',
      scope: 'data:write',
      role: 'service_role',
      body: 'json',
      handler: (r, c) => json(db.createTable(c.project, r.json as Body), 201),
    }),
    route({
      method: 'DELETE',
      path: '/db/tables/:t',
      auth: 'key',
      scope: 'data:write',
      role: 'service_role',
      handler: (r, c) => {
        db.dropTable(c.project, r.params.t!);
        return noContent();
      },
    }),
    route({
      method: 'GET',
      path: '/db/tables/:t/rls',
      auth: 'key',
      scope: 'data:read',
      handler: (r, c) => json(db.getRls(c.project, r.params.t!)),
    }),
    route({
      method: 'PUT',
      path: '/db/tables/:t/rls',
      auth: 'key',
      scope: 'data:write',
      role: 'service_role',
      body: 'json',
      handler: (r, c) => json(db.putRls(c.project, r.params.t!, r.json as Body)),
    }),
    route({
      method: 'GET',
      path: '/db/tables/:t/rows',
      auth: 'bearer?',
      scope: 'data:read',
      handler: (r, c) => textOrLater(db.list(c.project, c.auth, r.params.t!, r.query)),
    }),
    route({
      method: 'POST',
      path: '/db/tables/:t/rows',
      auth: 'bearer?',
      scope: 'data:write',
      body: 'json',
      handler: (r, c) => jsonText(db.insert(c.project, c.auth, r.params.t!, r.json), 201),
    }),
    route({
      method: 'POST',
      path: '/db/tables/:t/import',
      auth: 'bearer?',
      scope: 'data:write',
      body: 'stream',
      handler: (r, c) => importRows(db, r, c),
    }),
    route({
      method: 'GET',
      path: '/db/tables/:t/rows/:id',
      auth: 'bearer?',
      scope: 'data:read',
      handler: (r, c) => textOrLater(db.get(c.project, c.auth, r.params.t!, r.params.id!)),
    }),
    route({
      method: 'PATCH',
      path: '/db/tables/:t/rows/:id',
      auth: 'bearer?',
      scope: 'data:write',
      body: 'json',
      handler: (r, c) => jsonText(db.update(c.project, c.auth, r.params.t!, r.params.id!, r.json)),
    }),
    route({
      method: 'DELETE',
      path: '/db/tables/:t/rows/:id',
      auth: 'bearer?',
      scope: 'data:write',
      handler: (r, c) => {
        db.delete(c.project, c.auth, r.params.t!, r.params.id!);
        return noContent();
      },
    }),
  ];
}

/** Rows per import transaction, and bytes of lines (docs/api.md "Importing rows"). */
const IMPORT_BATCH_ROWS = 1000;
const IMPORT_BATCH_BYTES = 1024 * 1024;
/** The longest line of an import, characters (a row as large as a JSON body may be). */
const importLineLimit = (c: ProjectCtx): number => c.config.maxJsonBody;

/**
 * `POST /db/tables/{t}/import`: NDJSON rows (one JSON object per line, as `POST …/rows` takes it;
 * blank lines skipped) read as they arrive and inserted in batches, each batch one transaction
 * through the rows API's own insert (checks, RLS insert policy, change events). A failure keeps the
 * batches committed before it and says how many in `details.inserted` (and the line in `details.line`).
 */
async function importRows(db: DbService, r: HandlerRequest, c: ProjectCtx): Promise<EdgeResponse> {
  const name = r.params.t!;
  // note: an unknown table is 404 before a byte of the body is read.
  db.table(c.project, name);
  let inserted = 0;
  let lineNo = 0;
  let batch: unknown[] = [];
  let batchLines: number[] = [];
  let bytes = 0;
  const flush = (): void => {
    if (batch.length === 0) return;
    try {
      inserted += db.insertMany(c.project, c.auth, name, batch);
    } catch (err) {
      const index = err instanceof EdgeError ? err.details?.index : undefined;
      if (typeof index === 'number') lineNo = batchLines[index]!;
      throw err;
    }
    batch = [];
    batchLines = [];
    bytes = 0;
  };
  try {
    for await (const text of lines(r.stream!, importLineLimit(c))) {
      lineNo++;
      if (text.trim() === '') continue;
      batch.push(parseJsonObject(text, c.config.maxJsonDepth, `line ${lineNo}`));
      batchLines.push(lineNo);
      bytes += text.length;
      if (batch.length >= IMPORT_BATCH_ROWS || bytes >= IMPORT_BATCH_BYTES) flush();
    }
    flush();
  } catch (err) {
    if (!(err instanceof EdgeError) || err.status >= 500) throw err;
    const details: Record<string, unknown> = { ...err.details, inserted };
    delete details.index;
    if (err.code !== 'payload_too_large' && err.code !== 'request_timeout' && lineNo > 0) details.line = lineNo;
    throw new EdgeError(err.code, err.message, { details, headers: err.headers, cause: err.cause });
  }
  return json({ inserted });
}
