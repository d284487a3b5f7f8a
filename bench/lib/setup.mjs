// Helpers for scenario setup: JSON calls to the server under test, and one-time seeding.

/** A JSON request to a server started by the bench (throws on a status ≥ 300). */
export async function apiCall(server, method, path, body, headers) {
  const res = await fetch(server.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : null;
}

/** Wraps a seeding function so it runs once per server process (by pid), sharing its promise. */
export function oncePerServer(fn) {
  const done = new Map();
  return (server) => {
    if (!done.has(server.pid)) done.set(server.pid, fn(server));
    return done.get(server.pid);
  };
}
