import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Metadata, Sharp, SharpOptions } from 'sharp';
import { EdgeError } from '../../core/errors.js';
import {
  MIME,
  normalise,
  resolveFormat,
  transformableKind,
  type ImageKind,
  type OutFormat,
  type TransformParams,
} from './image-params.js';

type SharpFn = (input: string, options?: SharpOptions) => Sharp;
let sharpFn: Promise<SharpFn> | null = null;

/**
 * sharp (libvips) loaded on the first transform, not at startup: its import alone takes about
 * 200 ms, which a server that never resizes an image should not pay (docs/benchmarks.md, startup).
 */
function loadSharp(): Promise<SharpFn> {
  sharpFn ??= import('sharp').then(({ default: sharp }) => {
    // note: libvips' own operation cache holds decoded images across calls: with one process
    // serving many projects it only costs memory, and every variant is cached on disk anyway.
    sharp.cache(false);
    return sharp;
  });
  return sharpFn;
}

export interface TransformLimits {
  /** Largest source, in pixels over every frame, decoded (checked from the header first). */
  readonly maxPixels: number;
  /** A transform still running after this long fails (sharp's timeout, whole seconds). */
  readonly timeoutMs: number;
  /** Transforms running at once, server-wide. */
  readonly concurrency: number;
  /** Transforms waiting for a slot; past this, 503 `unavailable` with `Retry-After`. */
  readonly queue: number;
  /** Bytes of cached variants per project (least recently used go first). */
  readonly cacheBytes: number;
  /** Variants cached per object (by ref). */
  readonly perObject: number;
}

export const DEFAULT_TRANSFORM_LIMITS: TransformLimits = {
  maxPixels: 50_000_000,
  timeoutMs: 10_000,
  concurrency: 2,
  queue: 16,
  cacheBytes: 256 * 1024 * 1024,
  perObject: 32,
};

/** The object a transform reads: its stored file (named by ref), type and entity tag. */
export interface TransformSource {
  readonly projectId: string;
  readonly ref: string;
  readonly file: string;
  readonly contentType: string;
  readonly etag: string;
}

/** A cached variant ready to send. */
export interface Variant {
  readonly file: string;
  readonly size: number;
  readonly contentType: string;
  /** A strong entity tag of this variant (quoted). */
  readonly etag: string;
  /** Whether `Accept` chose the format (then the answer carries `Vary: Accept`). */
  readonly negotiated: boolean;
  /** Its key in the project's cache index (`stillCached`). */
  readonly cacheKey: string;
}

/** A bounded FIFO of async jobs: `concurrency` at once, `queue` waiting, the rest refused with 503. */
export class JobQueue {
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  constructor(
    readonly concurrency: number,
    readonly queue: number,
  ) {}

  get running(): number {
    return this.#running;
  }
  get waiting(): number {
    return this.#waiting.length;
  }

  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.#running >= this.concurrency) {
      if (this.#waiting.length >= this.queue) {
        throw new EdgeError('unavailable', 'too many image transforms are waiting; retry shortly', { headers: { 'retry-after': '1' } });
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    try {
      return await job();
    } finally {
      const next = this.#waiting.shift();
      // note: a finished job hands its slot straight to the next one, so `running` never dips
      // and a newcomer cannot overtake the queue.
      if (next) next();
      else this.#running--;
    }
  }
}

interface Entry {
  readonly key: string;
  readonly ref: string;
  readonly file: string;
  readonly size: number;
}

/** One project's cached variants: a Map in least-recently-used order (first is oldest). */
class ProjectVariants {
  bytes = 0;
  readonly lru = new Map<string, Entry>();
  readonly byRef = new Map<string, Set<string>>();

  touch(e: Entry): void {
    this.lru.delete(e.key);
    this.lru.set(e.key, e);
  }
  add(e: Entry): void {
    this.lru.set(e.key, e);
    this.bytes += e.size;
    let s = this.byRef.get(e.ref);
    if (!s) this.byRef.set(e.ref, (s = new Set()));
    s.add(e.key);
  }
  remove(e: Entry): void {
    if (!this.lru.delete(e.key)) return;
    this.bytes -= e.size;
    const s = this.byRef.get(e.ref);
    s?.delete(e.key);
    if (s?.size === 0) this.byRef.delete(e.ref);
  }
}

const VARIANT_FILE = /^([0-9a-f]{40})\.(jpeg|png|gif|webp|avif|tiff)$/;
const SAFE_REF = /^[0-9A-Za-z_-]{1,64}$/;
/** Sniffed kinds remembered (by project and ref). */
const KIND_CACHE = 10_000;

/**
 * Image transforms with a disk cache of variants (docs/api.md "Image transforms").
 * Variants live in `projects/<id>/variants/<ref>/<hash>.<ext>`, where `hash` covers the
 * ref and the normalised parameters; an index per project is rebuilt from the folder on
 * first use after a start, so the caps hold across restarts.
 */
export class ImageTransformer {
  readonly #limits: TransformLimits;
  readonly #queue: JobQueue;
  readonly #dir: (projectId: string) => string;
  readonly #projects = new Map<string, Promise<ProjectVariants>>();
  readonly #inflight = new Map<string, Promise<Variant>>();
  readonly #kinds = new Map<string, ImageKind>();
  /** Indexes already loaded, for the lookup that does not wait (`cached`). */
  readonly #loaded = new Map<string, ProjectVariants>();

  constructor(variantsDir: (projectId: string) => string, limits: Partial<TransformLimits> = {}) {
    this.#limits = { ...DEFAULT_TRANSFORM_LIMITS, ...limits };
    this.#queue = new JobQueue(this.#limits.concurrency, this.#limits.queue);
    this.#dir = variantsDir;
  }

  get limits(): TransformLimits {
    return this.#limits;
  }

  /**
   * The cached variant of `src` for `params`, found without waiting, or null when finding it
   * needs the disk (the source not sniffed yet, the project's index not loaded, or no variant yet).
   * Throws what `variant` throws for bad parameters.
   */
  cached(src: TransformSource, params: TransformParams, accept: string | undefined): Variant | null {
    const kind = this.#kinds.get(`${src.projectId}/${src.ref}`);
    const pv = this.#loaded.get(src.projectId);
    if (kind === undefined || pv === undefined) return null;
    const out = resolveFormat(params.format, kind, accept);
    const { key, etag } = keys(src, params, out);
    const hit = pv.lru.get(key);
    if (!hit) return null;
    pv.touch(hit);
    return { file: hit.file, size: hit.size, contentType: MIME[out], etag, negotiated: params.format === 'auto', cacheKey: key };
  }

  /** Whether a variant found before is still cached (then it counts as used now). */
  stillCached(projectId: string, cacheKey: string): boolean {
    const hit = this.#loaded.get(projectId)?.lru.get(cacheKey);
    if (hit === undefined) return false;
    this.#loaded.get(projectId)!.touch(hit);
    return true;
  }

  /** The variant of `src` for `params` (from the cache, or made now). `accept` is the request's `Accept`. */
  async variant(src: TransformSource, params: TransformParams, accept: string | undefined): Promise<Variant> {
    if (!SAFE_REF.test(src.ref)) throw new EdgeError('internal', 'bad object ref');
    // note: a ref names one immutable version (an overwrite makes a new ref), so its sniffed kind
    // is remembered: a cached variant is then served without touching the source file.
    const kindKey = `${src.projectId}/${src.ref}`;
    let kind = this.#kinds.get(kindKey);
    if (kind === undefined) {
      kind = transformableKind(src.contentType, await readHead(src.file));
      if (this.#kinds.size >= KIND_CACHE) this.#kinds.delete(this.#kinds.keys().next().value!);
      this.#kinds.set(kindKey, kind);
    }
    const out = resolveFormat(params.format, kind, accept);
    const negotiated = params.format === 'auto';
    const { hash, key, etag } = keys(src, params, out);
    const pv = await this.#project(src.projectId);
    const hit = pv.lru.get(key);
    if (hit) {
      pv.touch(hit);
      return { file: hit.file, size: hit.size, contentType: MIME[out], etag, negotiated, cacheKey: key };
    }
    const flightKey = `${src.projectId}/${key}`;
    let p = this.#inflight.get(flightKey);
    if (!p) {
      p = this.#make(src, params, kind, out, pv, key, hash, etag, negotiated).finally(() => this.#inflight.delete(flightKey));
      this.#inflight.set(flightKey, p);
    }
    return p;
  }

  /** Drops every cached variant of an object's ref (the object was overwritten or deleted). */
  async dropRef(projectId: string, ref: string): Promise<void> {
    if (!SAFE_REF.test(ref)) return;
    const loaded = this.#projects.get(projectId);
    if (loaded) {
      const pv = await loaded;
      for (const key of [...(pv.byRef.get(ref) ?? [])]) {
        const e = pv.lru.get(key);
        if (e) pv.remove(e);
      }
    }
    await rm(join(this.#dir(projectId), ref), { recursive: true, force: true });
  }

  /** Forgets a project's index (its folder was removed). */
  forget(projectId: string): void {
    this.#projects.delete(projectId);
    this.#loaded.delete(projectId);
    for (const k of [...this.#kinds.keys()]) if (k.startsWith(`${projectId}/`)) this.#kinds.delete(k);
  }

  /** Cached bytes and variants of a project (tests, stats). */
  async usage(projectId: string): Promise<{ bytes: number; variants: number }> {
    const pv = await this.#project(projectId);
    return { bytes: pv.bytes, variants: pv.lru.size };
  }

  #project(projectId: string): Promise<ProjectVariants> {
    let p = this.#projects.get(projectId);
    if (!p) {
      p = scan(this.#dir(projectId));
      this.#projects.set(projectId, p);
      p.then(
        (pv) => {
          if (this.#projects.get(projectId) === p) this.#loaded.set(projectId, pv);
        },
        () => this.#projects.delete(projectId),
      );
    }
    return p;
  }

  async #make(
    src: TransformSource,
    params: TransformParams,
    kind: string,
    out: OutFormat,
    pv: ProjectVariants,
    key: string,
    hash: string,
    etag: string,
    negotiated: boolean,
  ): Promise<Variant> {
    const dir = join(this.#dir(src.projectId), src.ref);
    await mkdir(dir, { recursive: true });
    const tmp = join(dir, `.tmp-${randomBytes(8).toString('hex')}`);
    try {
      await this.#queue.run(() => render(src.file, tmp, params, kind, out, this.#limits));
      const size = (await stat(tmp)).size;
      const file = join(dir, `${hash}.${out}`);
      await rename(tmp, file);
      const siblings = pv.byRef.get(src.ref);
      // note: a variant larger than the whole cap is kept alone (everything else goes) until the
      // next one pushes it out. The per-object cap first (its least recently used sibling), then the project's bytes.
      if (siblings && siblings.size >= this.#limits.perObject) {
        for (const e of pv.lru.values()) {
          if (e.ref === src.ref) {
            await this.#evict(pv, e);
            break;
          }
        }
      }
      while (pv.bytes + size > this.#limits.cacheBytes && pv.lru.size > 0) {
        await this.#evict(pv, pv.lru.values().next().value!);
      }
      pv.add({ key, ref: src.ref, file, size });
      return { file, size, contentType: MIME[out], etag, negotiated, cacheKey: key };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  async #evict(pv: ProjectVariants, e: Entry): Promise<void> {
    pv.remove(e);
    // note: a reader that already opened the file keeps reading it after the unlink (POSIX).
    await rm(e.file, { force: true });
  }
}

/** A variant's cache key (ref and hash of the normalised parameters) and strong ETag. */
function keys(src: TransformSource, params: TransformParams, out: OutFormat): { hash: string; key: string; etag: string } {
  const hash = createHash('sha1').update(src.ref).update('\0').update(normalise(params, out)).digest('hex');
  return { hash, key: `${src.ref}/${hash}`, etag: `"${hash.slice(0, 8)}-${src.etag.replace(/^W\/|"/g, '')}"` };
}

async function readHead(file: string): Promise<Uint8Array> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(32);
    const { bytesRead } = await fh.read(buf, 0, 32, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

async function scan(root: string): Promise<ProjectVariants> {
  const pv = new ProjectVariants();
  let refs: string[];
  try {
    refs = await readdir(root);
  } catch {
    return pv;
  }
  const found: (Entry & { atime: number })[] = [];
  for (const ref of refs) {
    if (!SAFE_REF.test(ref)) continue;
    let names: string[];
    try {
      names = await readdir(join(root, ref));
    } catch {
      continue;
    }
    for (const name of names) {
      const file = join(root, ref, name);
      const m = VARIANT_FILE.exec(name);
      if (!m) {
        // a temporary file of a transform cut short by a stop
        if (name.startsWith('.tmp-')) await rm(file, { force: true });
        continue;
      }
      const st = await stat(file).catch(() => null);
      if (st) found.push({ key: `${ref}/${m[1]}`, ref, file, size: st.size, atime: st.mtimeMs });
    }
  }
  found.sort((a, b) => a.atime - b.atime);
  for (const { atime: _, ...e } of found) pv.add(e);
  return pv;
}

/**
 * Decodes, resizes and encodes one image to `dest`. The pixel cap is judged from the header
 * (width x height x frames) before anything is decoded; sharp's own `limitInputPixels` and
 * `timeout` guard the pipeline itself.
 */
export async function render(
  file: string,
  dest: string,
  params: TransformParams,
  kind: string,
  out: OutFormat,
  limits: Pick<TransformLimits, 'maxPixels' | 'timeoutMs'>,
): Promise<void> {
  const sharp = await loadSharp();
  let meta: Metadata;
  try {
    meta = await sharp(file, { limitInputPixels: false, animated: true }).metadata();
  } catch (err) {
    throw new EdgeError('unsupported_media_type', 'the image could not be read', { cause: err });
  }
  const width = meta.width ?? 0;
  const pageHeight = meta.pageHeight ?? meta.height ?? 0;
  const pages = Math.max(1, meta.pages ?? 1);
  const pixels = width * pageHeight * pages;
  if (width === 0 || pageHeight === 0) throw new EdgeError('unsupported_media_type', 'the image has no size');
  if (pixels > limits.maxPixels) {
    throw new EdgeError('payload_too_large', `the image has ${pixels} pixels over ${pages} frame(s), more than the limit of ${limits.maxPixels}`, {
      details: { pixels, limit: limits.maxPixels },
    });
  }
  const animated = pages > 1 && (out === 'gif' || out === 'webp');
  let img = sharp(file, { limitInputPixels: limits.maxPixels, animated, failOn: 'error' })
    .timeout({ seconds: Math.max(1, Math.ceil(limits.timeoutMs / 1000)) })
    .autoOrient();
  if (params.width !== null || params.height !== null) {
    img = img.resize({ width: params.width ?? undefined, height: params.height ?? undefined, fit: params.fit, withoutEnlargement: true });
  }
  switch (out) {
    case 'jpeg':
      img = img.jpeg({ quality: params.quality, mozjpeg: false });
      break;
    case 'webp':
      img = img.webp({ quality: params.quality, effort: 2 });
      break;
    case 'avif':
      img = img.avif({ quality: params.quality, effort: 2 });
      break;
    case 'png':
      img = img.png();
      break;
    case 'gif':
      img = img.gif();
      break;
    case 'tiff':
      img = img.tiff();
      break;
  }
  try {
    await img.toFile(dest);
  } catch (err) {
    const msg = err instanceof Error ? err.message : '';
    if (/timeout/i.test(msg)) throw new EdgeError('unavailable', `the image transform took longer than ${limits.timeoutMs} ms`, { cause: err });
    if (/pixel limit/i.test(msg)) throw new EdgeError('payload_too_large', `the image has more than ${limits.maxPixels} pixels`, { cause: err });
    throw new EdgeError('unsupported_media_type', `the ${kind} image could not be decoded`, { cause: err });
  }
}
