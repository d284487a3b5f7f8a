import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type Uws = typeof import('uWebSockets.js');

let cached: Uws | null | undefined;

/**
 * Loads the native uWS binary of the pinned build, or returns null when there is
 * none for this Node ABI. Loading the binary directly (not the package's main)
 * skips its silent fallback to a shim whose onWritable/tryEnd/upgrade throw
 * (so the native backend would fail at runtime, not at load); a real build exports SHARED_COMPRESSOR.
 */
export function loadNativeUws(): Uws | null {
  if (cached !== undefined) return cached;
  cached = null;
  try {
    const require = createRequire(import.meta.url);
    const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
    const file = join(pkgDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
    if (existsSync(file)) {
      const mod = require(file) as Uws;
      if ('SHARED_COMPRESSOR' in mod) cached = mod;
    }
  } catch {
    cached = null;
  }
  return cached;
}
