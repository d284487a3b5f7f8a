import type { SseChannel, SseEvent, SseSource } from '../edge/route.js';

/** Formats one SSE frame; data lines are split so a newline in data cannot forge fields. */
export function sseFrame(event: string, data: string, id?: string): string {
  let out = '';
  if (id !== undefined) out += `id: ${id.replace(/[\r\n]/g, '')}\n`;
  out += `event: ${event.replace(/[\r\n]/g, '')}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + '\n';
}

// note: a fan-out sends one event to many streams in a row (realtime: every SSE subscriber of a
// group gets the same change): the frame is formatted and encoded to UTF-8 once for the run and the
// same bytes handed to every sink (uWS converts a string argument on every write).
let lastEvent = '';
let lastData = '';
let lastId: string | undefined;
let lastFrame: Buffer | null = null;
const encodedFrame = (event: string, data: string, id?: string): Buffer => {
  if (lastFrame === null || data !== lastData || event !== lastEvent || id !== lastId) {
    lastFrame = Buffer.from(sseFrame(event, data, id));
    lastEvent = event;
    lastData = data;
    lastId = id;
  }
  return lastFrame;
};

// note: the same for a batch: every stream of a fan-out group gets the same array, formatted once.
let lastBatch: readonly SseEvent[] | null = null;
let lastBatchBytes: Buffer | null = null;
const encodedBatch = (events: readonly SseEvent[]): Buffer => {
  if (lastBatchBytes === null || events !== lastBatch) {
    let text = '';
    for (const e of events) text += sseFrame(e.event, e.data, e.id);
    lastBatchBytes = Buffer.from(text);
    lastBatch = events;
  }
  return lastBatchBytes;
};

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
};

export const HEARTBEAT_MS = 20_000;
/** A client that falls this far behind is closed; it resumes with Last-Event-ID. */
export const MAX_QUEUED_BYTES = 1024 * 1024;

/** Low-level writer a backend provides; returns false on backpressure. */
export interface SseSink {
  write(chunk: string | Uint8Array): boolean;
  end(): void;
  /** Called once the sink can take more after a false write. */
  onDrain(fn: () => void): void;
}

/**
 * A backpressure-aware SSE channel over a sink: frames queue while the sink is
 * full, and a client past MAX_QUEUED_BYTES is closed.
 */
export class SseConnection implements SseChannel {
  #closed = false;
  #queue: (string | Uint8Array)[] = [];
  #queued = 0;
  #blocked = false;
  #cleanup: (() => void) | void = undefined;
  readonly #sink: SseSink;
  readonly #heartbeat: NodeJS.Timeout;
  readonly #onClosed: () => void;

  constructor(sink: SseSink, onClosed: () => void) {
    this.#sink = sink;
    this.#onClosed = onClosed;
    sink.onDrain(() => this.#flush());
    this.#heartbeat = setInterval(() => this.#push(': ping\n\n'), HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  start(source: SseSource): void {
    this.#push(': ok\n\n');
    try {
      this.#cleanup = source(this);
    } catch {
      this.close();
    }
    if (this.#closed) this.#runCleanup();
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(event: string, data: string, id?: string): boolean {
    return this.#push(encodedFrame(event, data, id));
  }

  sendBatch(events: readonly SseEvent[]): boolean {
    return this.#push(encodedBatch(events));
  }

  comment(text: string): boolean {
    return this.#push(`: ${text.replace(/[\r\n]/g, ' ')}\n\n`);
  }

  #push(chunk: string | Uint8Array): boolean {
    if (this.#closed) return false;
    if (this.#blocked) {
      this.#queue.push(chunk);
      this.#queued += chunk.length;
      if (this.#queued > MAX_QUEUED_BYTES) {
        this.close();
        return false;
      }
      return true;
    }
    if (!this.#sink.write(chunk)) this.#blocked = true;
    return true;
  }

  #flush(): void {
    this.#blocked = false;
    while (this.#queue.length > 0 && !this.#blocked && !this.#closed) {
      const chunk = this.#queue.shift()!;
      this.#queued -= chunk.length;
      if (!this.#sink.write(chunk)) this.#blocked = true;
    }
  }

  /** Ends the stream from the server side. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#sink.end();
    } catch {
      // note: the client may already be gone.
    }
    this.#finish();
  }

  /** The client went away. */
  aborted(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#finish();
  }

  #finish(): void {
    clearInterval(this.#heartbeat);
    this.#queue = [];
    this.#runCleanup();
    this.#onClosed();
  }

  #runCleanup(): void {
    const c = this.#cleanup;
    this.#cleanup = undefined;
    try {
      c?.();
    } catch {
      // note: a failing cleanup must not break the connection teardown.
    }
  }
}
