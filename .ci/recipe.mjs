// Writes the files of the CI recipe in docs/operations.md ("CI recipe: a server inside the
// test run") into a folder, as they are documented: each ```ts block of that section whose
// first line is `// <path>` becomes that file. Used by .ci/pack-check and test/cli/embed.test.ts,
// so the documented recipe is the one that is run.
// Usage: node .ci/recipe.mjs <folder>
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const target = process.argv[2];
if (!target) {
  process.stderr.write('usage: node .ci/recipe.mjs <folder>\n');
  process.exit(2);
}
const doc = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
const start = doc.indexOf('\n## CI recipe');
if (start < 0) throw new Error('docs/operations.md has no "## CI recipe" section');
const end = doc.indexOf('\n## ', start + 1);
const section = doc.slice(start, end < 0 ? undefined : end);
const written = [];
for (const m of section.matchAll(/```ts\n\/\/ ([^\n]+)\n([\s\S]*?)```/g)) {
  const path = normalize(m[1].trim());
  if (path.startsWith('..') || path.startsWith('/')) throw new Error(`recipe file outside the folder: ${path}`);
  const file = join(target, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `// ${m[1]}\n${m[2]}`);
  written.push(path);
}
if (written.length === 0) throw new Error('the CI recipe section has no files');
process.stdout.write(written.join('\n') + '\n');
