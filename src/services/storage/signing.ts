import { createHmac, timingSafeEqual } from 'node:crypto';
import { EdgeError, invalidField } from '../../edge/errors.js';
import { TRANSFORM_PARAMS } from './transform.js';

// Signed URLs (docs/api.md "Storage", "Signed URLs"): `?token=<payload>.<sig>`, the payload naming
// the project, the expiry and the transform, the signature an HMAC-SHA256 over project, bucket, key,
// expiry and transform under a per-project key derived from the master key.

export const SIGNED_MAX_S = 7 * 86_400;
export const SIGNED_DEFAULT_S = 3600;

interface Payload {
  /** The project. */
  readonly p: string;
  /** Expiry, Unix seconds. */
  readonly e: number;
  /** The normalised transform query (`w=200&fit=cover`), '' for none. */
  readonly t: string;
}

/** A transform as a query string in a fixed order (`w, h, g, fit, format, q`); '' for none. */
export function transformQuery(from: (name: string) => string | null): string {
  const parts: string[] = [];
  for (const name of TRANSFORM_PARAMS) {
    const v = from(name);
    if (v !== null) parts.push(`${name}=${encodeURIComponent(v)}`);
  }
  return parts.join('&');
}

/** A signed URL's `transform` body field: an object of `w, h, g, fit, format, q` with string or number values. */
export function transformField(raw: unknown): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalidField('transform', 'must be an object of w, h, g, fit, format, q');
  const t = raw as Record<string, unknown>;
  for (const k of Object.keys(t)) {
    if (!(TRANSFORM_PARAMS as readonly string[]).includes(k)) throw invalidField('transform', `unknown parameter "${k}" (w, h, g, fit, format, q)`);
    const v = t[k];
    if ((typeof v !== 'string' && typeof v !== 'number') || String(v).length === 0 || String(v).length > 32) {
      throw invalidField('transform', `${k} must be a short string or a number`);
    }
  }
  return transformQuery((n) => (t[n] === undefined ? null : String(t[n])));
}

export class UrlSigner {
  readonly #keyOf: (project: string) => Buffer;
  readonly #keys = new Map<string, Buffer>();

  constructor(keyOf: (project: string) => Buffer) {
    this.#keyOf = keyOf;
  }

  #key(project: string): Buffer {
    let k = this.#keys.get(project);
    if (k === undefined) {
      k = this.#keyOf(project);
      if (this.#keys.size >= 10_000) this.#keys.clear();
      this.#keys.set(project, k);
    }
    return k;
  }

  forget(project: string): void {
    this.#keys.delete(project);
  }

  #sig(p: Payload, bucket: string, key: string): Buffer {
    return createHmac('sha256', this.#key(p.p)).update(JSON.stringify([p.p, bucket, key, p.e, p.t])).digest();
  }

  /** A token for reading `bucket/key` of `project` until `expiresAt` (Unix seconds), with `transform` bound. */
  token(project: string, bucket: string, key: string, expiresAt: number, transform: string): string {
    const p: Payload = { p: project, e: expiresAt, t: transform };
    return `${Buffer.from(JSON.stringify(p)).toString('base64url')}.${this.#sig(p, bucket, key).toString('base64url')}`;
  }

  /**
   * The project a token grants `bucket/key` of, with `transform` exactly as signed; 403
   * `invalid_signature` for any change, 403 `url_expired` once past its expiry (checked after the signature).
   */
  verify(token: string | null, bucket: string, key: string, transform: string, nowS: number): string {
    const bad = (): EdgeError => new EdgeError('invalid_signature', 'the signature does not match this URL');
    if (token === null || token.length > 2048) throw bad();
    const dot = token.indexOf('.');
    if (dot <= 0 || dot !== token.lastIndexOf('.')) throw bad();
    let p: Payload;
    try {
      p = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')) as Payload;
    } catch {
      throw bad();
    }
    if (typeof p !== 'object' || p === null || typeof p.p !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(p.p) || !Number.isSafeInteger(p.e) || typeof p.t !== 'string') throw bad();
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    // note: signed over the transform this request asks for, so an added or changed parameter fails like any other change.
    const want = this.#sig({ p: p.p, e: p.e, t: transform }, bucket, key);
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw bad();
    if (nowS >= p.e) throw new EdgeError('url_expired', 'this signed URL has expired');
    return p.p;
  }
}
