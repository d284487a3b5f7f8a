import { EdgeError, invalidField } from '../../core/errors.js';

/** How a resize fits the box (sharp's `fit`). */
export const FITS = ['cover', 'contain', 'fill', 'inside', 'outside'] as const;
export type Fit = (typeof FITS)[number];

/** What format a transform answers in: `origin` keeps the source's, `auto` reads `Accept`. */
export const FORMATS = ['origin', 'jpeg', 'png', 'webp', 'avif', 'auto'] as const;
export type FormatParam = (typeof FORMATS)[number];

/** A source format sniffed from the object's first bytes; only these are ever decoded. */
export type ImageKind = 'jpeg' | 'png' | 'webp' | 'avif' | 'gif' | 'tiff';
/** A concrete output format. */
export type OutFormat = ImageKind;

/** The largest width or height a transform may ask for (docs/api.md "Image transforms"). */
export const MAX_SIDE = 4000;
export const DEFAULT_QUALITY = 80;
/** The query parameters that make a read a transform. */
export const TRANSFORM_KEYS = ['w', 'h', 'g', 'fit', 'format', 'q'] as const;

/** A transform as asked for, validated. A null side keeps the ratio (or the source size when both are null). */
export interface TransformParams {
  readonly width: number | null;
  readonly height: number | null;
  readonly fit: Fit;
  readonly format: FormatParam;
  readonly quality: number;
}

const SIDE = /^(?:0|[1-9][0-9]{0,3})$/;

function side(field: string, v: string, zeroOk: boolean): number | null {
  // note: the length is checked before any number is made of it, so `w=100000` or a
  // thousand-digit value is refused as text (nothing is ever sized from it).
  if (!SIDE.test(v)) throw invalidField(field, `must be an integer from ${zeroOk ? 0 : 1} to ${MAX_SIDE}`);
  const n = Number(v);
  if (n > MAX_SIDE || (n === 0 && !zeroOk)) throw invalidField(field, `must be an integer from ${zeroOk ? 0 : 1} to ${MAX_SIDE}`);
  return n === 0 ? null : n;
}

function one(q: URLSearchParams, key: string): string | null {
  const all = q.getAll(key);
  if (all.length > 1) throw invalidField(key, 'may be given once');
  return all.length === 0 ? null : all[0]!;
}

/**
 * The transform a query string asks for, or null when it names none of `w h g fit format q`.
 * `w`/`h` are 1-4000; `g=WxH` is a geometry where one side 0 keeps the ratio; `g` with `w`
 * or `h` is 400; `fit` defaults to `cover`, `format` to `origin`, `q` (1-100) to 80.
 */
export function parseTransform(q: URLSearchParams): TransformParams | null {
  if (!TRANSFORM_KEYS.some((k) => q.has(k))) return null;
  const w = one(q, 'w');
  const h = one(q, 'h');
  const g = one(q, 'g');
  let width: number | null = null;
  let height: number | null = null;
  if (g !== null) {
    if (w !== null || h !== null) throw invalidField('g', 'may not be combined with w or h');
    const m = /^([0-9]{1,5})x([0-9]{1,5})$/.exec(g);
    if (!m) throw invalidField('g', `must be WxH, each side 0-${MAX_SIDE} (0 keeps the ratio)`);
    width = side('g', m[1]!, true);
    height = side('g', m[2]!, true);
    if (width === null && height === null) throw invalidField('g', 'needs at least one side above 0');
  } else {
    if (w !== null) width = side('w', w, false);
    if (h !== null) height = side('h', h, false);
  }
  const fitText = one(q, 'fit');
  if (fitText !== null && !(FITS as readonly string[]).includes(fitText)) throw invalidField('fit', `must be one of ${FITS.join(', ')}`);
  const formatText = one(q, 'format');
  if (formatText !== null && !(FORMATS as readonly string[]).includes(formatText)) throw invalidField('format', `must be one of ${FORMATS.join(', ')}`);
  const qText = one(q, 'q');
  let quality = DEFAULT_QUALITY;
  if (qText !== null) {
    if (!/^[1-9][0-9]{0,2}$/.test(qText) || Number(qText) > 100) throw invalidField('q', 'must be an integer from 1 to 100');
    quality = Number(qText);
  }
  return { width, height, fit: (fitText ?? 'cover') as Fit, format: (formatText ?? 'origin') as FormatParam, quality };
}

/** Sniffs a raster format from an object's first bytes (at least 32 of them); null for anything else (HTML, SVG, PDF, …). */
export function sniffImage(head: Uint8Array): ImageKind | null {
  const b = head;
  const ascii = (from: number, to: number): string => String.fromCharCode(...b.subarray(from, to));
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && b[0] === 0x89 && ascii(1, 4) === 'PNG' && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a) return 'png';
  if (b.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'gif';
  if (b.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'webp';
  if (b.length >= 12 && ascii(4, 8) === 'ftyp' && ['avif', 'avis'].includes(ascii(8, 12))) return 'avif';
  if (b.length >= 4 && ((b[0] === 0x49 && b[1] === 0x49 && b[2] === 0x2a && b[3] === 0) || (b[0] === 0x4d && b[1] === 0x4d && b[2] === 0 && b[3] === 0x2a))) return 'tiff';
  return null;
}

/** The stored content types a transform accepts, by sniffed kind: the bytes and the label must agree. */
const LABELS: Record<ImageKind, readonly string[]> = {
  jpeg: ['image/jpeg', 'image/jpg', 'image/pjpeg'],
  png: ['image/png'],
  gif: ['image/gif'],
  webp: ['image/webp'],
  avif: ['image/avif'],
  tiff: ['image/tiff'],
};

/** Whether a stored type is one of the raster image types a transform reads (other objects are served as stored). */
export function isRasterType(contentType: string): boolean {
  const label = contentType.split(';')[0]!.trim().toLowerCase();
  return Object.values(LABELS).some((l) => l.includes(label));
}

/**
 * Whether an object may be transformed: its stored type is an image type and its bytes are
 * that raster format. HTML (or SVG) uploaded as `image/png` fails here and is never decoded.
 */
export function transformableKind(contentType: string, head: Uint8Array): ImageKind {
  const label = contentType.split(';')[0]!.trim().toLowerCase();
  const kind = sniffImage(head);
  if (kind === null || !LABELS[kind].includes(label)) {
    throw new EdgeError('unsupported_media_type', 'only JPEG, PNG, GIF, WebP, AVIF and TIFF objects whose bytes match their type can be transformed');
  }
  return kind;
}

/** `format=auto`: AVIF, else WebP, when `Accept` names it; else the source's format. */
export function resolveFormat(format: FormatParam, source: ImageKind, accept: string | undefined): OutFormat {
  if (format === 'origin') return source;
  if (format !== 'auto') return format;
  const a = (accept ?? '').toLowerCase();
  if (/(^|[\s,])image\/avif(\s*(;|,|$))/.test(a) && !/image\/avif\s*;\s*q=0(\.0*)?(\s*(,|$))/.test(a)) return 'avif';
  if (/(^|[\s,])image\/webp(\s*(;|,|$))/.test(a) && !/image\/webp\s*;\s*q=0(\.0*)?(\s*(,|$))/.test(a)) return 'webp';
  return source;
}

/**
 * The canonical text of a transform after `auto` was resolved: what variants are cached by.
 * Parameters that change nothing are left out (`fit` without a size; `q` for lossless output).
 */
export function normalise(p: TransformParams, out: OutFormat): string {
  const parts: string[] = [];
  if (p.width !== null || p.height !== null) {
    parts.push(`w=${p.width ?? 0}`, `h=${p.height ?? 0}`);
    if (p.width !== null && p.height !== null) parts.push(`fit=${p.fit}`);
  }
  parts.push(`f=${out}`);
  if (out === 'jpeg' || out === 'webp' || out === 'avif') parts.push(`q=${p.quality}`);
  return parts.join('&');
}

export const MIME: Record<OutFormat, string> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  gif: 'image/gif',
  webp: 'image/webp',
  avif: 'image/avif',
  tiff: 'image/tiff',
};
