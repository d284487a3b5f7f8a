/**
 * The code that runs inside every function isolate before the user's module (docs/api.md
 * "Sandbox" and "ctx"). It is a function expression, called once from the host with three
 * `ivm.Callback`s (the only host objects that ever enter an isolate, and they only take and
 * return copied strings and numbers) and the user's handler; it returns `[invoke, deliver, wait]`,
 * which only the host holds (as References): nothing of it is reachable from `globalThis`.
 *
 * - `invoke(id, argsJson, userJson)` builds a fresh, frozen `ctx` for call `id`, runs the
 *   handler and returns `R<json>` (the result) or `E<message>` (a throw, or a result that is
 *   not JSON) when the handler threw or returned a primitive; when it returned an object (a
 *   promise, most often) it keeps that call's outcome and returns `P`.
 * - `wait(id)` hands over (once) the promise of call `id`'s outcome, resolving to `R…` or `E…`;
 *   the host calls it right after a `P`. A trivial handler thus costs one entry, with no promise
 *   to carry across.
 * - `deliver(op, ok, json)` settles the promise of an async `ctx` operation (`db.*`, `fetch`)
 *   that `hostStart` began; the host calls it when the operation finishes.
 * - `console.*` goes to the call whose event is running (the host enters the isolate only
 *   through these two functions, and each sets it); `ctx.log` always to its own call.
 *
 * `WebAssembly` is removed (its memory lives outside the V8 heap, and nothing needs it here).
 *
 * Primordials are taken before the user's module runs, so a module that replaces
 * `JSON.stringify` or `Promise` changes only what it sees, never what the host reads.
 */
export const BRIDGE_SOURCE = `(function (hostLog, hostStart, hostSecret, handler) {
  'use strict';
  const G = globalThis;
  delete G.WebAssembly;
  const stringify = JSON.stringify, parse = JSON.parse, freeze = Object.freeze, P = Promise, Err = Error, Str = String;
  const resolved = P.resolve.bind(P);
  const pending = new Map();
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete;
  let current = 0;
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
  const consoleFn = (level) => function () { if (current !== 0) hostLog(current, level, text(arguments)); };
  const con = freeze({ log: consoleFn('info'), info: consoleFn('info'), debug: consoleFn('debug'), warn: consoleFn('warn'), error: consoleFn('error'), trace: consoleFn('debug') });
  Object.defineProperty(G, 'console', { value: con, writable: true, configurable: true, enumerable: false });
  const failure = (e) => {
    const err = new Err(Str(e.message));
    err.code = Str(e.code);
    if (typeof e.status === 'number') err.status = e.status;
    return err;
  };
  const call = (id, op, payload) => new P((resolve, reject) => {
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
    const secrets = freeze({ get: (name) => hostSecret(id, Str(name)) });
    const log = function () { hostLog(id, 'info', text(arguments)); };
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
  const outcomes = new Map();
  function invoke(id, argsJson, userJson) {
    current = id;
    let r;
    try {
      r = handler(parse(argsJson), makeCtx(id, parse(userJson)));
    } catch (e) {
      return bad(e);
    }
    // note: a primitive is never a thenable (Promise.resolve would not read its "then"): answer it now.
    if (r === null || (typeof r !== 'object' && typeof r !== 'function')) return ok(r);
    mapSet.call(outcomes, id, resolved(r).then(ok, bad));
    return 'P';
  }
  function wait(id) {
    const p = mapGet.call(outcomes, id);
    mapDelete.call(outcomes, id);
    return p === undefined ? 'Ethe call has no outcome' : p;
  }
  return [invoke, deliver, wait];
})`;
