import { createReadStream, rmSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { EdgeError, toHttp } from '../core/errors.js';
import type { EdgeResponse, FileBody } from '../edge/route.js';

/** A response body a backend writes as it reads it; `length` known: sent with Content-Length. */
export interface Outgoing {
  status: number;
  headers: Record<string, string>;
  /** null: headers only (HEAD, or nothing to send). */
  source: AsyncIterable<Uint8Array> | null;
  length: number | undefined;
}

/**
 * Turns a `stream` or `file` answer into what a backend writes: for a file, its size as
 * `Content-Length`, `Accept-Ranges: bytes`, and one byte range when asked (`bytes=a-b`, `bytes=a-`,
 * `bytes=-n`: 206 with `Content-Range`; past the end: 416 with `Content-Range: bytes * /size`; several
 * ranges or a malformed header: the whole file, 200). HEAD: the same headers, no body.
 */
export function outgoing(method: string, range: string | undefined, r: EdgeResponse): Outgoing {
  const headers: Record<string, string> = { ...r.headers };
  if (r.file !== undefined) return fileOut(method, range, r, r.file, headers);
  const source = r.stream!;
  if (method === 'HEAD') {
    discard(source);
    return { status: r.status, headers, source: null, length: r.length };
  }
  return { status: r.status, headers, source, length: r.length };
}

function fileOut(method: string, range: string | undefined, r: EdgeResponse, file: FileBody, headers: Record<string, string>): Outgoing {
  const size = file.size ?? statSync(file.path).size;
  headers['accept-ranges'] = 'bytes';
  headers['content-type'] ??= file.contentType ?? 'application/octet-stream';
  let status = r.status;
  let start = 0;
  let end = size - 1;
  const asked = range === undefined || status !== 200 ? null : parseRange(range, size);
  if (asked === 'unsatisfiable') {
    removeFile(file);
    const h = toHttp(new EdgeError('range_not_satisfiable', `the range is outside the ${size}-byte body`), headers['x-request-id'] ?? '');
    const body = Buffer.from(JSON.stringify(h.body));
    headers['content-type'] = 'application/json; charset=utf-8';
    headers['content-range'] = `bytes */${size}`;
    return { status: 416, headers, source: method === 'HEAD' ? null : Readable.from([body]), length: body.length };
  }
  if (asked !== null) {
    [start, end] = asked;
    status = 206;
    headers['content-range'] = `bytes ${start}-${end}/${size}`;
  }
  const length = end - start + 1;
  if (method === 'HEAD' || length === 0) {
    removeFile(file);
    return { status, headers, source: method === 'HEAD' ? null : Readable.from([]), length };
  }
  const stream = createReadStream(file.path, { start, end, highWaterMark: 64 * 1024 });
  if (file.remove === true) stream.once('close', () => removeFile(file));
  return { status, headers, source: stream, length };
}

/**
 * One range of a `Range` header: [first, last] byte, 'unsatisfiable', or null (serve the whole
 * body: no range, a malformed header, another unit, or several ranges).
 */
export function parseRange(header: string, size: number): [number, number] | 'unsatisfiable' | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (m === null) return null;
  const [, a, b] = m;
  if (a === '' && b === '') return null;
  if (a === '') {
    // note: a suffix: the last n bytes (all of them when n exceeds the size).
    const n = Number(b);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const first = Number(a);
  const last = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (b !== '' && Number(b) < first) return null;
  if (first >= size) return 'unsatisfiable';
  return [first, last];
}

/** Ends a stream nobody will read (HEAD, a client gone): a Readable destroyed, an iterator returned. */
export function discard(source: AsyncIterable<Uint8Array> | Readable): void {
  if (source instanceof Readable) return void source.destroy();
  try {
    const it = source[Symbol.asyncIterator]();
    void it.return?.()?.catch(() => {});
  } catch {
    // note: a source that cannot be iterated again holds nothing to release.
  }
}

/** Releases an answer's body that will never be written (its client went): the stream ended, a temporary file deleted. */
export function abandon(r: EdgeResponse): void {
  if (r.stream !== undefined) discard(r.stream);
  if (r.file !== undefined) removeFile(r.file);
}

function removeFile(file: FileBody): void {
  if (file.remove === true) rmSync(file.path, { force: true });
}
