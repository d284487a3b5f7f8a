import {
  GraphQLError,
  Kind,
  execute,
  parse,
  specifiedRules,
  validate,
  type ASTVisitor,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationContext,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { normalize } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import { requireScope } from '../../edge/scopes.js';
import type { ProjectLease } from '../../project/registry.js';
import type { DbService } from './db.js';
import { Lru } from '../../sql/pg/lru.js';
import { fragments, limits } from './graphql-limits.js';
import { MAX_ROWS, MAX_VALUES, type Ctx } from './graphql-rows.js';
import { schemaOf } from './graphql-schema.js';

export { MAX_ALIASES, MAX_DEPTH, MAX_DIRECTIVES, MAX_FIELDS, MAX_INTROSPECTION_DEPTH, MAX_SPREADS, MAX_TYPE_LOOKUPS } from './graphql-limits.js';
export { MAX_ROWS, MAX_VALUES } from './graphql-rows.js';

/**
 * GraphQL over the database service (`POST/GET /db/graphql`), with `graphql` (docs/api.md "GraphQL").
 * The schema is generated from the db catalog and rebuilt when it changes. Every field
 * resolves through DbService, so scopes and RLS are the caller's, as in REST. Foreign keys
 * become nested fields resolved in one list query per level (no N+1).
 *
 * Parsing, validation and execution run on the main thread, so every cost that grows with
 * the input is capped before it is paid (docs/api.md "GraphQL"): the query text and its
 * tokens at parse; fields, aliases, directives, fragment spreads and depth over the
 * document and each operation with fragments expanded, before validation; rows read and
 * response bytes during and after execution.
 *
 * The service: `run` and its answers, with the introspection cache and the cache of validated
 * documents (a repeated query skips parse, caps and validation). The caps on the document are
 * graphql-limits.ts, the schema graphql-schema.ts, its scalars graphql-scalars.ts, the
 * resolvers' reads (batched per level, both directions of a foreign key) graphql-rows.ts.
 */
/** Bytes of the JSON response; never truncated, refused. */
export const MAX_RESPONSE = 16 * 1024 * 1024;
const MAX_QUERY = 64 * 1024;
const MAX_TOKENS = 10_000;
/** Brackets of any kind nested in a document's text: checked before graphql's recursive parser (5,000 levels would overflow its stack). */
const MAX_NESTING = 64;

/** Whether `{ [ (` nest deeper than `max` outside strings and comments. */
function nestsDeeper(q: string, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < q.length; i++) {
    const c = q[i];
    if (c === '#') {
      while (i < q.length && q[i] !== '\n') i++;
    } else if (c === '"') {
      if (q.startsWith('"""', i)) {
        const end = q.indexOf('"""', i + 3);
        i = end < 0 ? q.length : end + 2;
      } else {
        for (i++; i < q.length && q[i] !== '"' && q[i] !== '\n'; i++) if (q[i] === '\\') i++;
      }
    } else if (c === '{' || c === '[' || c === '(') {
      if (++depth > max) return true;
    } else if (c === '}' || c === ']' || c === ')') depth--;
  }
  return false;
}

/** Introspection responses kept per schema version. */
const INTROSPECTION_CACHE = 8;
const INTROSPECTION_CACHE_CHARS = 2 * 1024 * 1024;
/** Parsed and validated documents kept per schema version (LRU), for queries of at most DOCUMENT_CHARS. */
const DOCUMENT_CACHE = 64;
const DOCUMENT_CHARS = 4096;

export interface GraphQLBody {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

/**
 * Responses of introspection-only queries, per schema (so per schema version: a catalog
 * change builds a new schema), keyed by query text, operation name and variables. They do
 * not depend on the caller, so a client loading the schema again costs a lookup.
 */
const introspections = new WeakMap<GraphQLSchema, Map<string, string>>();
/**
 * Documents that parsed, passed the caps and validated, per schema (a catalog change builds a
 * new one, so a cached document is valid against the schema it is kept under), keyed by query
 * text: a repeated query skips parse, caps and validation.
 */
const documents = new WeakMap<GraphQLSchema, Lru<string, DocumentNode>>();

/** One answer of `run`: the HTTP status and the JSON response, serialized once. */
export interface GraphQLAnswer {
  status: number;
  json: string;
}

export class GraphQLService {
  constructor(readonly db: DbService) {}

  /** The project's schema, cached until its table catalog changes. */
  schema(lease: ProjectLease): GraphQLSchema {
    return schemaOf(this.db, lease);
  }

  /**
   * Runs one GraphQL request. Scopes are checked per operation, as REST checks them per
   * route: a query needs `data:read`, a mutation `data:write` (401 `missing_scope`, thrown).
   * GET passes `variables` as the JSON text of its query string.
   */
  async run(lease: ProjectLease, auth: AuthContext, body: GraphQLBody, method: 'GET' | 'POST'): Promise<GraphQLAnswer> {
    const { query, operationName = null } = body;
    let { variables = null } = body;
    if (typeof query !== 'string' || query.trim() === '') return fail(400, 'query must be a non-empty string', 'invalid_field');
    if (query.length > MAX_QUERY) return fail(413, `query is longer than ${MAX_QUERY} characters`, 'payload_too_large');
    if (method === 'GET' && typeof variables === 'string') {
      try {
        variables = JSON.parse(variables) as unknown;
      } catch {
        return fail(400, 'variables must be JSON', 'invalid_field');
      }
    }
    if (variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) return fail(400, 'variables must be an object', 'invalid_field');
    if (operationName !== null && typeof operationName !== 'string') return fail(400, 'operationName must be a string', 'invalid_field');
    const schema = this.schema(lease);
    // note: only requests without variables are cached (introspection clients send none), so no request pays for a key of them.
    const cacheKey = variables === null || Object.keys(variables).length === 0 ? `${operationName ?? ''}\u0000${query}` : null;
    const cached = cacheKey === null ? undefined : introspections.get(schema)?.get(cacheKey);
    if (cached !== undefined) {
      requireScope(auth.scopes, 'data:read');
      return { status: 200, json: cached };
    }
    let doc = documents.get(schema)?.get(query);
    const validated = doc !== undefined;
    if (doc === undefined) {
      try {
        if (nestsDeeper(query, MAX_NESTING)) return fail(400, `the query nests deeper than ${MAX_NESTING} levels`, 'invalid_request');
        doc = parse(query, { maxTokens: MAX_TOKENS });
      } catch (err) {
        return fail(400, (err as Error).message, 'invalid_request');
      }
      // note: before validation, whose cost grows with fields and fragments (overlapping fields are compared pairwise).
      const limit = limits(doc);
      if (limit) return fail(400, limit, 'invalid_request');
    }
    const op = operation(doc, operationName as string | null);
    if (op) {
      if (method === 'GET' && op.operation !== 'query') return fail(405, 'mutations need POST', 'method_not_allowed');
      requireScope(auth.scopes, op.operation === 'mutation' ? 'data:write' : 'data:read');
    }
    if (!validated) {
      const errors = validate(schema, doc, RULES);
      if (errors.length) return answer(400, { errors: errors.map((e) => ({ message: e.message, locations: e.locations, extensions: { code: 'invalid_request' } })) });
      if (query.length <= DOCUMENT_CHARS) keep(schema, query, doc);
    }
    const ctx: Ctx = { lease, auth, loaders: new Map(), rows: 0, values: 0 };
    const result = await execute({ schema, document: doc, contextValue: ctx, variableValues: variables as Record<string, unknown> | null, operationName: operationName as string | null });
    // note: no data at all is a request error (variables that do not coerce, an unknown operationName): nothing ran.
    if (!('data' in result)) return answer(400, { errors: (result.errors ?? []).map((e) => ({ message: e.message, locations: e.locations, extensions: { code: 'invalid_request' } })) });
    const mutation = op?.operation === 'mutation';
    if (ctx.rows > MAX_ROWS) return refuse(mutation, `the query reads more than ${MAX_ROWS} rows; page with limit and offset`);
    if (ctx.values > MAX_VALUES) return refuse(mutation, `the query returns more than ${MAX_VALUES} values (rows × fields); select fewer rows or fields`);
    const out: Record<string, unknown> = { data: result.data ?? null };
    if (result.errors?.length) out.errors = result.errors.map(formatError);
    const json = JSON.stringify(out);
    // note: a UTF-16 unit is at most 3 UTF-8 bytes, so most answers skip counting them.
    const bytes = json.length * 3 <= MAX_RESPONSE ? 0 : Buffer.byteLength(json);
    if (bytes > MAX_RESPONSE) return refuse(mutation, `the response would be ${bytes} bytes, more than the limit of ${MAX_RESPONSE}; select fewer rows or fields`);
    if (cacheKey !== null && op && !out.errors && json.length <= INTROSPECTION_CACHE_CHARS && introspectionOnly(doc, op)) remember(schema, cacheKey, json);
    return { status: 200, json };
  }
}

const answer = (status: number, body: unknown): GraphQLAnswer => ({ status, json: JSON.stringify(body) });
const fail = (status: number, message: string, code: string): GraphQLAnswer => answer(status, { errors: [{ message, extensions: { code } }] });
/**
 * A result over a cap is refused whole, never truncated: 400 for a query. A mutation has
 * committed by then, so it answers 200 and says so (a committed write is acknowledged).
 */
const refuse = (mutation: boolean, why: string): GraphQLAnswer =>
  mutation ? answer(200, { data: null, errors: [{ message: `the mutation was applied, but ${why}`, extensions: { code: 'invalid_request' } }] }) : fail(400, why, 'invalid_request');

function remember(schema: GraphQLSchema, key: string, json: string): void {
  let m = introspections.get(schema);
  if (!m) {
    m = new Map();
    introspections.set(schema, m);
  }
  // note: insertion order makes the Map a FIFO; the oldest entry goes first.
  if (m.size >= INTROSPECTION_CACHE) m.delete(m.keys().next().value!);
  m.set(key, json);
}

/** Adds a validated document to its schema's LRU. */
function keep(schema: GraphQLSchema, query: string, doc: DocumentNode): void {
  let m = documents.get(schema);
  if (!m) {
    m = new Lru(DOCUMENT_CACHE);
    documents.set(schema, m);
  }
  m.set(query, doc);
}

/**
 * A field whose definition names `extensions.oneOfArgs` (insert and update: typed `object`/
 * `set` or JSON `data`) takes exactly one of them, written and not `null`.
 */
function OneOfArgsRule(context: ValidationContext): ASTVisitor {
  return {
    Field(node) {
      const def = context.getFieldDef();
      const names = (def?.extensions as { oneOfArgs?: readonly string[] } | undefined)?.oneOfArgs;
      if (!def || !names) return;
      const given = (node.arguments ?? []).filter((a) => names.includes(a.name.value) && a.value.kind !== Kind.NULL);
      if (given.length !== 1) context.reportError(new GraphQLError(`${def.name} takes exactly one of ${names[0]} (typed) or ${names[1]} (JSON)`, { nodes: node }));
    },
  };
}
const RULES = [...specifiedRules, OneOfArgsRule];

function formatError(e: GraphQLError): unknown {
  const orig = e.originalError;
  let code = 'invalid_request';
  let message = e.message;
  if (orig && !(orig instanceof GraphQLError)) {
    const n = normalize(orig);
    code = n.code;
    message = n.code === 'internal' ? 'internal error' : n.message;
  } else if (typeof e.extensions?.code === 'string') code = e.extensions.code;
  return { message, locations: e.locations, path: e.path, extensions: { code } };
}

/** The operation `execute` will run, or null when it will refuse (no such name, or several unnamed). */
function operation(doc: DocumentNode, name: string | null): OperationDefinitionNode | null {
  const ops = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  if (name) return ops.find((d) => d.name?.value === name) ?? null;
  return ops.length === 1 ? ops[0]! : null;
}

/** Whether the operation's root selects only `__schema`, `__type` and `__typename` (fragments followed). */
function introspectionOnly(doc: DocumentNode, op: OperationDefinitionNode): boolean {
  if (op.operation !== 'query') return false;
  const frags = fragments(doc);
  const only = (set: SelectionSetNode, seen: Set<string>): boolean =>
    set.selections.every((sel) => {
      if (sel.kind === Kind.FIELD) return sel.name.value.startsWith('__');
      if (sel.kind === Kind.INLINE_FRAGMENT) return only(sel.selectionSet, seen);
      const f = frags.get(sel.name.value);
      if (!f || seen.has(f.name.value)) return false;
      return only(f.selectionSet, new Set([...seen, f.name.value]));
    });
  return only(op.selectionSet, new Set());
}

