import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | null = null;

/** The package root (the folder holding package.json), from the sources or the bundle. */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('platform-edge: cannot find the package root');
    dir = up;
  }
  return (root = dir);
}

export const schemaDir = (): string => join(packageRoot(), 'schema');
