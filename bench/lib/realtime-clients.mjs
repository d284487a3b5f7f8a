// Realtime bench clients (bench/scenarios/realtime.mjs): a minimal SSE client over fetch and a
// `ws` client. Run as a worker thread (workerData: { targets }), it opens its share of the
// subscribers, posts 'ready', records each change's commit-to-delivery latency, and on 'stop'
// posts them back and closes: the clients spread over threads so one saturated event loop is not
// what the latency measures. Load only on 127.0.0.1.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

/** SSE over fetch: calls onChange(data text) per `event: change`; resolves once `ready` came. */
export async function sse(url, onChange, clients) {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal });
  if (res.status !== 200) throw new Error(`SSE ${url.replace(/apikey=[^&]+|access_token=[^&]+/g, '…')} answered ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  clients.push({ close: () => ac.abort() });
  let buf = '';
  let ready;
  const isReady = new Promise((r) => (ready = r));
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) !== -1) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (frame.includes('event: ready')) ready();
          else if (frame.includes('event: change')) onChange(frame.slice(frame.indexOf('data: ') + 6));
        }
      }
    } catch {
      // aborted
    }
  })();
  return isReady;
}

export function wsClient(url, onChange, clients, protocols = []) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols);
    clients.push({ close: () => ws.terminate() });
    ws.on('message', (d) => {
      const text = d.toString('utf8');
      if (text.startsWith('{"type":"ready"')) resolve();
      else if (text.startsWith('{"type":"change"')) onChange(text);
    });
    ws.on('error', reject);
    ws.on('unexpected-response', (_q, r) => reject(new Error(`WS answered ${r.statusCode}`)));
  });
}

export async function openInBatches(n, open) {
  for (let i = 0; i < n; i += 50) await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, j) => open(i + j)));
}

/** Opens targets ({ kind: 'sse'|'ws', url, protocols? }) in batches. */
export const openTargets = (targets, onChange, clients) =>
  openInBatches(targets.length, (i) => {
    const t = targets[i];
    return t.kind === 'sse' ? sse(t.url, onChange, clients) : wsClient(t.url, onChange, clients, t.protocols ?? []);
  });

if (!isMainThread && workerData?.targets) {
  const lat = [];
  const clients = [];
  const onChange = (text) => {
    const now = Date.now();
    lat.push(now - Date.parse(JSON.parse(text).at));
  };
  parentPort.on('message', (m) => {
    if (m === 'count') parentPort.postMessage({ count: lat.length });
    else if (m === 'stop') {
      for (const c of clients) c.close();
      parentPort.postMessage({ lat });
      parentPort.close();
    }
  });
  openTargets(workerData.targets, onChange, clients).then(
    () => parentPort.postMessage({ ready: true }),
    (e) => parentPort.postMessage({ error: e.message }),
  );
}
