#!/usr/bin/env node
// Thin entry: runs the bundled CLI (built by `npm run build`, which `npm install` runs).
//
// note: Node starts without flags. isolated-vm (functions) needs `--no-node-snapshot`, but it runs
// only in the server's sandbox process, which the server starts with the flag itself
// (src/services/functions/sandbox-process.ts); the server never loads it. Node's startup snapshot
// makes a start about 50 ms faster (docs/benchmarks.md "Startup").
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';

const { main } = loadBundle();
process.exitCode = await main(process.argv.slice(2));

/**
 * Runs build/platform-edge.cjs (the bundled CLI) through V8's code cache: the first `serve`
 * compiles it and, 2 s after it started, writes the compiled code
 * beside it (build/platform-edge.cjs.<digest>.cache, by write-then-rename, so concurrent starts never
 * read half a file); later starts hand it back to V8, which checks it against the source, its
 * own version and flags and falls back to compiling (and rewrites it) on any mismatch. A
 * folder we cannot write (a read-only install) only means no cache. About 40–50 ms of the time
 * to ready (docs/benchmarks.md "Startup").
 */
function loadBundle() {
  const file = fileURLToPath(new URL('../build/platform-edge.cjs', import.meta.url));
  if (!existsSync(file)) {
    process.stderr.write('platform-edge: build/platform-edge.cjs is missing; run `npm run build` first.\n');
    process.exit(1);
  }
  // note: set before compiling: V8 keys cached code by its flags, and the SQL parser
  // (src/sql/pg/parse.ts) sets this one when it loads; set later it would void the cache every time.
  setFlagsFromString('--liftoff-only');
  const source = readFileSync(file);
  // note: V8 checks cached code against the source's length only; the digest in the name ties
  // the cache to these very bytes, so a rebuild never runs an older build's code.
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const cacheFile = `${file}.${digest}.cache`;
  let cached;
  try {
    cached = readFileSync(cacheFile);
  } catch {
    cached = undefined;
  }
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source.toString('utf8')}\n})`, {
    filename: file,
    cachedData: cached,
  });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file));
  // note: only `serve` writes it (where time to ready counts), once it is up, so the functions its start ran are in it.
  if (process.argv[2] === 'serve' && (cached === undefined || script.cachedDataRejected === true)) {
    const save = () => {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
        // note: older builds' caches go.
        for (const f of readdirSync(dirname(file))) {
          if (/^platform-edge\.cjs\.[0-9a-f]{16}\.cache$/.test(f) && join(dirname(file), f) !== cacheFile) rmSync(join(dirname(file), f), { force: true });
        }
      } catch {
        rmSync(tmp, { force: true });
      }
    };
    setTimeout(save, 2000).unref();
  }
  return module.exports;
}
