/** A minimal real SSE client over fetch: parses frames as the EventSource spec does. */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

export interface SseClient {
  response: Response;
  /** Resolves with the next event matching `pred`, or rejects after `timeoutMs`. */
  next(pred?: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const queue: SseEvent[] = [];
  const waiters: (() => void)[] = [];
  let ended = false;
  if (response.body) {
    void (async () => {
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value;
          let i: number;
          while ((i = buf.indexOf('\n\n')) !== -1) {
            const frame = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const ev: SseEvent = { event: 'message', data: '' };
            const data: string[] = [];
            for (const line of frame.split('\n')) {
              if (line.startsWith(':')) continue;
              const c = line.indexOf(':');
              const field = c === -1 ? line : line.slice(0, c);
              const val = c === -1 ? '' : line.slice(c + 1).replace(/^ /, '');
              if (field === 'event') ev.event = val;
              else if (field === 'data') data.push(val);
              else if (field === 'id') ev.id = val;
            }
            if (data.length === 0 && ev.event === 'message') continue;
            ev.data = data.join('\n');
            queue.push(ev);
            waiters.splice(0).forEach((w) => w());
          }
        }
      } catch {
        // aborted
      } finally {
        ended = true;
        waiters.splice(0).forEach((w) => w());
      }
    })();
  }
  return {
    response,
    async next(pred = () => true, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const idx = queue.findIndex(pred);
        if (idx !== -1) return queue.splice(idx, 1)[0]!;
        if (ended) throw new Error('SSE stream ended');
        const left = deadline - Date.now();
        if (left <= 0) throw new Error('timed out waiting for an SSE event');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
    },
    close: () => controller.abort(),
  };
}
