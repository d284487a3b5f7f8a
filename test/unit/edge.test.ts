import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { loadConfig } from '../../src/config.js';
import { EdgeError, toHttp } from '../../src/core/errors.js';
import { parseJsonBody } from '../../src/edge/json-body.js';
import { json, route, type EdgeRequest } from '../../src/edge/route.js';
import { Router, split } from '../../src/edge/router.js';
import { EventBus } from '../../src/events/bus.js';
import { sseFrame } from '../../src/http/sse.js';

const h = () => json({});
const routes = [
  route({ method: 'GET', path: '/db/tables', auth: 'key', handler: h }),
  route({ method: 'GET', path: '/db/tables/:t/rows', auth: 'key', handler: h }),
  route({ method: 'POST', path: '/db/tables/:t/rows', auth: 'key', handler: h }),
  route({ method: 'GET', path: '/db/tables/:t/rows/:id', auth: 'key', handler: h }),
  route({ method: 'GET', path: '/db/schema', auth: 'key', handler: h }),
];

describe('router', () => {
  const r = new Router(routes);
  it('matches static and parameter segments', () => {
    const m = r.match('GET', split('/db/tables/todos/rows/42'));
    expect(m).toMatchObject({ kind: 'route', params: { t: 'todos', id: '42' } });
    expect(m.kind === 'route' && m.route.path).toBe('/db/tables/:t/rows/:id');
  });
  it('reports the allowed methods for a known path', () => {
    expect(r.match('DELETE', split('/db/tables/todos/rows'))).toEqual({ kind: 'method', allowed: ['GET', 'POST'] });
  });
  it('answers HEAD with the GET route', () => {
    expect(r.match('HEAD', split('/db/schema')).kind).toBe('route');
  });
  it('does not match an empty parameter or a longer path', () => {
    expect(r.match('GET', split('/db/tables//rows')).kind).toBe('none');
    expect(r.match('GET', split('/db/tables/t/rows/1/extra')).kind).toBe('none');
  });
  it('refuses duplicate routes', () => {
    expect(() => new Router([routes[0]!, routes[0]!])).toThrow(/duplicate/);
  });
});

describe('toHttp', () => {
  it('maps an EdgeError to its status and envelope', () => {
    const r = toHttp(new EdgeError('conflict', 'taken'), 'rid');
    expect(r).toMatchObject({ status: 409, body: { error: { code: 'conflict', message: 'taken' } } });
  });

  it('captures no stack for an EdgeError but leaves other errors their stacks (a cause keeps its own)', () => {
    const cause = new RangeError('inner');
    const e = new EdgeError('not_found', 'gone', { cause });
    expect(e.stack).toBe('EdgeError: gone');
    expect(e.cause).toBe(cause);
    expect(cause.stack).toMatch(/\n\s+at /);
    expect(new TypeError('later').stack).toMatch(/\n\s+at /);
  });

  it('maps SQLite errors by code, never leaking their text', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (a TEXT UNIQUE NOT NULL)');
    db.prepare('INSERT INTO t VALUES (?)').run('x');
    const catchIt = (fn: () => void): unknown => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      throw new Error('did not throw');
    };
    const unique = toHttp(catchIt(() => db.prepare('INSERT INTO t VALUES (?)').run('x')), 'rid');
    expect(unique.status).toBe(409);
    expect(JSON.stringify(unique.body)).not.toContain('UNIQUE constraint');
    const notNull = toHttp(catchIt(() => db.prepare('INSERT INTO t VALUES (NULL)').run()), 'rid');
    expect(notNull.body.error.code).toBe('invalid_field');
  });

  it('hides unexpected errors behind 500 internal with the request id', () => {
    const r = toHttp(new TypeError('secret internals at /src/x.ts:1'), 'req-9');
    expect(r.status).toBe(500);
    expect(r.body.error).toEqual({ code: 'internal', message: 'internal error (request req-9)' });
    expect(r.internal).toBeInstanceOf(TypeError);
  });
});

describe('parseJsonBody', () => {
  const config = loadConfig({}, {});
  const req = (body: string | Buffer | null, headers: Record<string, string> = {}): EdgeRequest => ({
    method: 'POST',
    path: '/x',
    rawQuery: '',
    headers,
    body: body === null ? null : Buffer.from(body),
    ip: '',
    signal: new AbortController().signal,
  });
  const code = (fn: () => unknown): string => {
    try {
      fn();
    } catch (e) {
      return (e as EdgeError).code;
    }
    return 'ok';
  };

  it('reads an empty body as {}', () => expect(parseJsonBody(req(null), config)).toEqual({}));
  it('accepts +json media types and charsets', () => {
    expect(parseJsonBody(req('{"a":1}', { 'content-type': 'application/merge-patch+json; charset=utf-8' }), config)).toEqual({ a: 1 });
  });
  it('counts depth outside strings only', () => {
    expect(parseJsonBody(req(JSON.stringify({ s: '['.repeat(500) })), config)).toEqual({ s: '['.repeat(500) });
    expect(code(() => parseJsonBody(req('{"a":' + '['.repeat(65) + ']'.repeat(65) + '}'), config))).toBe('invalid_body');
  });
  it('handles escaped quotes inside strings', () => {
    expect(parseJsonBody(req('{"a":"x\\"[[[["}'), config)).toEqual({ a: 'x"[[[[' });
  });
  it('accepts arrays only when the route allows any value', () => {
    expect(code(() => parseJsonBody(req('[1]'), config))).toBe('invalid_body');
    expect(parseJsonBody(req('[1]'), config, true)).toEqual([1]);
  });
  it('rejects a body flagged too large', () => {
    expect(code(() => parseJsonBody({ ...req(null), bodyTooLarge: true }, config))).toBe('payload_too_large');
  });
});

describe('EventBus', () => {
  it('delivers to listeners, isolates throwing ones and unsubscribes', async () => {
    const errors: unknown[] = [];
    const bus = new EventBus((e) => errors.push(e));
    const seen: string[] = [];
    bus.on('key.revoked', () => {
      throw new Error('boom');
    });
    const off = bus.on('key.revoked', (e) => void seen.push(e.keyId));
    bus.emit('key.revoked', { projectId: 'p', at: '', keyId: 'k1' });
    // note: delivery is queued (test/unit/bus.test.ts); listeners run after the emitting turn.
    await bus.idle();
    off();
    bus.emit('key.revoked', { projectId: 'p', at: '', keyId: 'k2' });
    await bus.idle();
    expect(seen).toEqual(['k1']);
    // the throwing listener stays subscribed: one error per emit, each the listener's own
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'boom']);
  });
});

describe('sseFrame', () => {
  it('splits data lines so data cannot forge fields', () => {
    expect(sseFrame('log', 'a\nevent: evil\r\nb', '7')).toBe('id: 7\nevent: log\ndata: a\ndata: event: evil\ndata: b\n\n');
  });
});
