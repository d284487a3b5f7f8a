// Secrets and feature flags (issue 15, "Performance"): GET /secrets/flags/evaluate with 50 flags
// and a Bearer user against GET /auth/me (a Bearer user too) on the same server, same run.
import { servers } from '../lib/index.mjs';

const FLAGS = 50;

async function call(url, path, headers, init = {}) {
  const res = await fetch(url + path, { ...init, headers: { ...headers, 'content-type': 'application/json' } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

/** An anonymous user's token with the publishable key (no argon2 in the setup). */
async function userHeaders(server) {
  const key = { 'x-service-key': server.info.keys.publishable };
  const s = await call(server.url, '/auth/anonymous', key, { method: 'POST' });
  return { ...key, authorization: `Bearer ${s.access_token}` };
}

/**
 * 50 flags of every kind: 20 under a partial rollout (the user is hashed into each), 10
 * disabled, 20 on for everyone; values booleans, strings, numbers and small objects.
 */
async function seedFlags(server) {
  const svc = { 'x-service-key': server.info.keys.service };
  for (let i = 0; i < FLAGS; i++) {
    const kind = i % 5;
    const value = kind === 0 ? true : kind === 1 ? `variant-${i}` : kind === 2 ? i * 10 : kind === 3 ? { color: 'teal', size: i } : false;
    const body = { value, rollout: i < 20 ? 5 + i * 4 : 100, enabled: i < 20 || i >= 30, description: `bench flag ${i}` };
    await call(server.url, `/secrets/flags/bench.flag-${String(i).padStart(2, '0')}`, svc, { method: 'PUT', body: JSON.stringify(body) });
  }
}

const evaluateScenario = (http, minRatio) => ({
  name: `GET /secrets/flags/evaluate (${FLAGS} flags, Bearer) vs GET /auth/me (Bearer), same server (${http === 'uws' ? 'uWS' : 'node:http'})`,
  baseline: { server: servers.edge(http), path: '/auth/me', setup: async (server) => ({ headers: await userHeaders(server) }) },
  target: {
    server: servers.edge(http),
    path: '/secrets/flags/evaluate',
    setup: async (server) => {
      await seedFlags(server);
      return { headers: await userHeaders(server) };
    },
  },
  targets: { minRatio },
});

export default {
  id: 'secrets',
  title: 'Secrets and feature flags: flag evaluation',
  scenarios: [evaluateScenario('uws', 0.6), evaluateScenario('node', 0.6)],
};
