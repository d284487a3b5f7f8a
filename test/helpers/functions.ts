import type { TestServer } from './server.js';

export interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
  headers: Headers;
}

export interface Who {
  key?: string | null;
  token?: string;
}

/** A JSON call against a test server (body sent as JSON when given). */
export async function call(s: TestServer, method: string, path: string, body?: unknown, who: Who = {}): Promise<Answer> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = null;
  }
  return { status: res.status, body: parsed, text, headers: res.headers };
}

/** Deploys a JS function with the service key; asserts 200 or 201. */
export async function deploy(s: TestServer, name: string, source: string, options: Record<string, unknown> = {}): Promise<Answer> {
  const r = await call(s, 'PUT', `/functions/${name}`, { source, ...options }, { key: s.keys.service });
  if (r.status !== 200 && r.status !== 201) throw new Error(`deploy ${name}: ${r.status} ${r.text}`);
  return r;
}

/** Invokes a function (publishable key unless `who` says otherwise). */
export const invoke = (s: TestServer, name: string, args?: unknown, who: Who = {}, query = ''): Promise<Answer> =>
  call(s, 'POST', `/functions/${name}${query}`, args, who);
