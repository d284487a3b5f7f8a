import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { CreatedProject, TestServer } from './server.js';

// What test/api/migrations*.test.ts do with a migrated project (issue 17 item 5, "Done when"):
// each file of test/fixtures/migrations/ is applied unchanged, as one script, through
// POST /db/query with the service key, in a project of its own; then two users who signed up
// through /auth use it through the rows API, GraphQL and /db/query.

const JSON_H = { 'content-type': 'application/json' };
const PASSWORD = 'correct horse battery staple 1';
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export interface User {
  id: string;
  token: string;
}
export interface Res {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/** One migrated project and what its callers do with it. */
export class App {
  alice!: User;
  bob!: User;
  constructor(
    readonly s: TestServer,
    readonly p: CreatedProject,
  ) {}

  async call(method: string, path: string, body: unknown, who: User | 'service' | 'anon'): Promise<Res> {
    const headers: Record<string, string> = body === undefined ? {} : { ...JSON_H };
    if (typeof who === 'object') headers.authorization = `Bearer ${who.token}`;
    const key = who === 'service' ? this.p.service : this.p.publishable;
    const res = await this.s.req(path, { method, key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, text };
  }
  async signUp(email: string, extra: Record<string, unknown> = {}): Promise<User> {
    const r = await this.call('POST', '/auth/register', { email, password: PASSWORD, ...extra }, 'anon');
    expect(r.status, r.text).toBe(200);
    return { id: r.body.user.id, token: r.body.access_token };
  }

  /** Rows API: POST a row, expecting `status`; answers the body. */
  insert(t: string, data: Record<string, unknown>, who: User | 'service' | 'anon'): Promise<Res> {
    return this.call('POST', `/db/tables/${t}/rows`, { data }, who);
  }
  async list(t: string, who: User | 'service' | 'anon', query = ''): Promise<Array<{ id: unknown; data: Record<string, unknown> }>> {
    const r = await this.call('GET', `/db/tables/${t}/rows${query}`, undefined, who);
    expect(r.status, r.text).toBe(200);
    return r.body.rows;
  }
  async sql(sql: string, who: User | 'service' | 'anon', params: unknown[] = []): Promise<Record<string, unknown>[]> {
    const r = await this.call('POST', '/db/query', { sql, params }, who);
    expect(r.status, `${sql}: ${r.text}`).toBe(200);
    return r.body.rows;
  }
  gql(query: string, who: User | 'service' | 'anon', variables: Record<string, unknown> = {}): Promise<Res> {
    return this.call('POST', '/db/graphql', { query, variables }, who);
  }
}

/** A fresh project with `file` applied unchanged as one script, and alice and bob signed up. */
export async function migrate(s: TestServer, file: string, aliceSignUp: Record<string, unknown> = {}, bobSignUp: Record<string, unknown> = {}): Promise<App> {
  const app = new App(s, s.createProject(file.replace(/\W/g, '_')));
  const sql = readFileSync(new URL(`../fixtures/migrations/${file}`, import.meta.url), 'utf8');
  const r = await app.call('POST', '/db/query', { sql }, 'service');
  expect(r.status, r.text).toBe(200);
  app.alice = await app.signUp('alice@example.com', aliceSignUp);
  app.bob = await app.signUp('bob@example.com', bobSignUp);
  return app;
}

/** The error of a failed rows-API or SQL call. */
export function failed(r: Res, status: number, code: string): { message: string; details?: Record<string, unknown> } {
  expect(r.status, r.text).toBe(status);
  expect(r.body.error.code).toBe(code);
  return r.body.error;
}
