import type { RouteDef } from './route.js';

interface Node {
  readonly statics: Map<string, Node>;
  param: { name: string; node: Node } | null;
  /** A `*name` last segment: binds the rest of the path (one or more non-empty segments). */
  rest: { name: string; node: Node } | null;
  readonly methods: Map<string, RouteDef>;
}

const newNode = (): Node => ({ statics: new Map(), param: null, rest: null, methods: new Map() });

export type Match =
  | { kind: 'route'; route: RouteDef; params: Record<string, string> }
  | { kind: 'method'; allowed: string[] }
  | { kind: 'none' };

/**
 * A segment trie over the declarative route table: static segments win over `:params`, which
 * win over a catch-all `*name` (the last segment of a template; it binds the rest of the path,
 * `/`s included, e.g. `/storage/objects/:bucket/*key`). The path alone picks the route; its
 * method is checked after (405 with the allowed ones).
 */
export class Router {
  readonly #root = newNode();

  constructor(routes: readonly RouteDef[]) {
    for (const r of routes) this.#add(r);
  }

  #add(r: RouteDef): void {
    let node = this.#root;
    const segs = split(r.path);
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i]!;
      if (seg.startsWith('*')) {
        const name = seg.slice(1);
        if (i !== segs.length - 1 || name === '') throw new Error(`route ${r.path}: a catch-all *name must be the last segment`);
        if (node.rest && node.rest.name !== name) {
          throw new Error(`route ${r.path}: catch-all *${name} clashes with *${node.rest.name}`);
        }
        node.rest ??= { name, node: newNode() };
        node = node.rest.node;
      } else if (seg.startsWith(':')) {
        const name = seg.slice(1);
        if (node.param && node.param.name !== name) {
          throw new Error(`route ${r.path}: parameter :${name} clashes with :${node.param.name}`);
        }
        node.param ??= { name, node: newNode() };
        node = node.param.node;
      } else {
        let next = node.statics.get(seg);
        if (!next) node.statics.set(seg, (next = newNode()));
        node = next;
      }
    }
    if (node.methods.has(r.method)) throw new Error(`duplicate route ${r.method} ${r.path}`);
    node.methods.set(r.method, r);
  }

  /** Matches path segments as sent (still percent-encoded: the pipeline decodes parameters once). HEAD falls back to GET. */
  match(method: string, segments: readonly string[]): Match {
    const params: Record<string, string> = {};
    const node = this.#walk(this.#root, segments, 0, params);
    if (!node || node.methods.size === 0) return { kind: 'none' };
    const route = node.methods.get(method) ?? (method === 'HEAD' ? node.methods.get('GET') : undefined);
    if (route) return { kind: 'route', route, params };
    for (const r of node.methods.values()) if (r.fallback !== true) return { kind: 'method', allowed: [...node.methods.keys()] };
    return { kind: 'none' };
  }

  #walk(node: Node, segs: readonly string[], i: number, params: Record<string, string>): Node | null {
    if (i === segs.length) return node;
    const seg = segs[i]!;
    const s = node.statics.get(seg);
    if (s) {
      const found = this.#walk(s, segs, i + 1, params);
      if (found && found.methods.size > 0) return found;
    }
    if (node.param && seg !== '') {
      const found = this.#walk(node.param.node, segs, i + 1, params);
      if (found && found.methods.size > 0) {
        params[node.param.name] = seg;
        return found;
      }
    }
    if (node.rest && node.rest.node.methods.size > 0) {
      // note: the rest must be one or more non-empty segments (no `a//b`, no trailing `/`).
      for (let j = i; j < segs.length; j++) if (segs[j] === '') return null;
      params[node.rest.name] = i === segs.length - 1 ? seg : segs.slice(i).join('/');
      return node.rest.node;
    }
    return null;
  }
}

/** `path.split('/').slice(1)` without String.prototype.split, which goes through the V8 runtime for every fresh string. */
export function split(path: string): string[] {
  const out: string[] = [];
  let start = path.indexOf('/') + 1;
  if (start === 0) return out;
  for (;;) {
    const i = path.indexOf('/', start);
    if (i === -1) {
      out.push(path.slice(start));
      return out;
    }
    out.push(path.slice(start, i));
    start = i + 1;
  }
}
