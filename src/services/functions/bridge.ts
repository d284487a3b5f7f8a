/**
 * The code that runs inside every function isolate before the user's module (docs/api.md
 * "Sandbox" and "ctx"). It is a function expression, called once from the host with four
 * `ivm.Callback`s (the only host objects that ever enter an isolate, and they only take and
 * return copied strings and numbers) and the user's handler; it returns `[batch, deliver]`,
 * which only the host holds (as References): nothing of it is reachable from `globalThis`.
 *
 * - `batch(id1, argsJson1, userJson1, id2, …)` runs up to 16 calls, in order, in one entry:
 *   each gets a fresh, frozen `ctx` and its own outcome, `R<json>` (the result) or
 *   `E<message>` (a throw, or a result that is not JSON). A call that returned a primitive and
 *   touched nothing of the host has its outcome in the entry's return value, the string
 *   `<id>:<length>:<outcome>` repeated (one crossing for the whole batch); a call that
 *   returned an object (a promise, most often), or that logged or called `ctx` during its
 *   synchronous part, sends its outcome through `hostDone` (an ignored callback: the isolate
 *   does not wait for the host), in the same format: at once after a synchronous part that
 *   touched the host, and for promises gathered per microtask checkpoint. So when the isolate dies
 *   in the middle of a batch, every call the host has not heard of has no effect outside the
 *   isolate, and the host may run it again (sandbox.ts).
 * - `deliver(op, ok, json)` settles the promise of an async `ctx` operation (`db.*`, `fetch`)
 *   that `hostStart` began; the host calls it when the operation finishes.
 * - `console.*` goes to the call whose event is running (the host enters the isolate only
 *   through these two functions: a batch sets it per call, `deliver` to its operation's call);
 *   `ctx.log` always to its own call.
 *
 * `WebAssembly` is removed (its memory lives outside the V8 heap, and nothing needs it here).
 *
 * Primordials are taken before the user's module runs, so a module that replaces
 * `JSON.stringify` or `Promise` changes only what it sees, never what the host reads.
 */
export const BRIDGE_SOURCE = `(function (hostLog, hostStart, hostSecret, hostDone, handler) {
  'use strict';
  const G = globalThis;
  delete G.WebAssembly;
  const stringify = JSON.stringify, parse = JSON.parse, freeze = Object.freeze, P = Promise, Err = Error, Str = String;
  const resolved = P.resolve.bind(P), then = P.prototype.then;
  const pending = new Map();
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete;
  let current = 0;
  /** Host calls made so far (logs, ctx operations, secrets): a batch compares it around each handler. */
  let touches = 0;
  const text = (args) => {
    let out = '';
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      let s;
      if (typeof a === 'string') s = a;
      else {
        try { s = stringify(a); } catch (e) { s = undefined; }
        if (s === undefined) { try { s = Str(a); } catch (e) { s = '[value]'; } }
      }
      out += (i ? ' ' : '') + s;
      if (out.length > 65536) return out.slice(0, 65536);
    }
    return out;
  };
  const consoleFn = (level) => function () { if (current !== 0) { touches++; hostLog(current, level, text(arguments)); } };
  const con = freeze({ log: consoleFn('info'), info: consoleFn('info'), debug: consoleFn('debug'), warn: consoleFn('warn'), error: consoleFn('error'), trace: consoleFn('debug') });
  Object.defineProperty(G, 'console', { value: con, writable: true, configurable: true, enumerable: false });
  const failure = (e) => {
    const err = new Err(Str(e.message));
    err.code = Str(e.code);
    if (typeof e.status === 'number') err.status = e.status;
    return err;
  };
  const call = (id, op, payload) => new P((resolve, reject) => {
    touches++;
    const n = hostStart(id, op, stringify(payload === undefined ? null : payload));
    mapSet.call(pending, n, { id, resolve, reject });
  });
  function deliver(n, ok, json) {
    const p = mapGet.call(pending, n);
    if (p === undefined) return;
    mapDelete.call(pending, n);
    current = p.id;
    if (ok) p.resolve(parse(json)); else p.reject(failure(parse(json)));
  }
  function makeCtx(id, user) {
    const db = freeze({
      list: (table, query) => call(id, 'db.list', { table, query }),
      get: (table, rowId) => call(id, 'db.get', { table, id: rowId }),
      insert: (table, data) => call(id, 'db.insert', { table, data }),
      update: (table, rowId, data) => call(id, 'db.update', { table, id: rowId, data }),
      delete: (table, rowId) => call(id, 'db.delete', { table, id: rowId }),
      query: (sql, params) => call(id, 'db.query', { sql, params }),
    });
    const fetch = (url, init) => call(id, 'fetch', { url: Str(url), init: init === undefined ? null : init }).then((r) => {
      const body = r.body;
      return freeze({ status: r.status, url: r.url, headers: freeze(r.headers), text: () => resolved(body), json: () => resolved().then(() => parse(body)) });
    });
    const secrets = freeze({ get: (name) => { touches++; return hostSecret(id, Str(name)); } });
    const log = function () { touches++; hostLog(id, 'info', text(arguments)); };
    return freeze({ user: user === null ? null : freeze(user), db, fetch, secrets, log });
  }
  const ok = (v) => {
    if (v === undefined) return 'Rnull';
    let s;
    try { s = stringify(v); } catch (e) { return 'Ethe result is not JSON: ' + message(e); }
    return s === undefined ? 'Ethe result is not JSON' : 'R' + s;
  };
  const message = (e) => {
    try {
      if (e !== null && typeof e === 'object' && 'message' in e) return Str(e.message);
      return Str(e);
    } catch (x) {
      return 'the function threw a value that cannot be read';
    }
  };
  const bad = (e) => 'E' + message(e);
  const pack = (id, o) => id + ':' + o.length + ':' + o;
  // note: outcomes of promises that settle in one microtask checkpoint go out in one crossing.
  let later = '';
  const flush = () => { const o = later; later = ''; hostDone(o); };
  const send = (id) => (o) => {
    if (later === '') then.call(resolved(), flush);
    later += pack(id, o);
  };
  function batch() {
    const a = arguments;
    let out = '';
    for (let i = 0; i + 2 < a.length; i += 3) {
      const id = a[i];
      current = id;
      const before = touches;
      let o;
      try {
        const r = handler(parse(a[i + 1]), makeCtx(id, parse(a[i + 2])));
        // note: a primitive is never a thenable (Promise.resolve would not read its "then"): answer it now.
        if (r === null || (typeof r !== 'object' && typeof r !== 'function')) o = ok(r);
        else {
          then.call(then.call(resolved(r), ok, bad), send(id));
          continue;
        }
      } catch (e) {
        o = bad(e);
      }
      if (touches !== before) hostDone(pack(id, o));
      else out += pack(id, o);
    }
    return out;
  }
  return [batch, deliver];
})`;
