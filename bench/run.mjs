// `npm run bench [-- NAME…] [-- --only TEXT]`: runs every section in bench/scenarios/*.mjs
// (or those whose file name or id is given), then rewrites its table in docs/benchmarks.md
// between <!-- bench:ID:start --> and <!-- bench:ID:end --> (reruns replace, never append).
//
// Environment: BENCH_DURATION (default 10s), BENCH_WARMUP (2s), BENCH_PAIRS (3),
// BENCH_STARTUP_RUNS (10), BENCH_NO_WRITE=1 to print the markdown without touching the doc.
// All load goes to servers this script starts on 127.0.0.1, and every run is time-bounded.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './lib/server.mjs';
import { requireWrk } from './lib/wrk.mjs';
import { runSection } from './lib/measure.mjs';
import { failed, machine, renderSection, rewriteSection } from './lib/report.mjs';

const args = process.argv.slice(2);
let only;
const names = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--only') only = args[++i];
  else if (args[i] === '-h' || args[i] === '--help') {
    process.stdout.write('usage: npm run bench [-- [SECTION…] [--only SCENARIO-TEXT]]\n');
    process.exit(0);
  } else names.push(args[i]);
}

const wrk = requireWrk();

const dir = join(ROOT, 'bench', 'scenarios');
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.mjs'))
  .sort();
const sections = [];
for (const f of files) {
  const mod = await import(pathToFileURL(join(dir, f)).href);
  const section = mod.default;
  if (!section?.id) throw new Error(`bench/scenarios/${f} must default-export a section with an id`);
  if (names.length && !names.includes(section.id) && !names.includes(basename(f, '.mjs'))) continue;
  sections.push(section);
}
if (names.length && sections.length === 0) {
  process.stderr.write(`bench: no section matches ${names.join(', ')} (have: ${files.join(', ')})\n`);
  process.exit(2);
}

// The CLI benchmarks run the bundle: make sure build/ matches src/.
process.stderr.write('bench: npm run build\n');
const b = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
if (b.status !== 0) process.exit(b.status ?? 1);

const doc = join(ROOT, 'docs', 'benchmarks.md');
let bad = false;
for (const section of sections) {
  const env = machine(wrk);
  const out = await runSection(section, { filter: only });
  const md = renderSection(out, env);
  if (process.env.BENCH_NO_WRITE === '1' || only) {
    process.stdout.write(`\n## ${section.title}\n\n${md}\n`);
    if (only) process.stderr.write('bench: --only ran a subset; docs/benchmarks.md left unchanged\n');
  } else {
    rewriteSection(doc, section.id, section.title, md);
    process.stderr.write(`bench: docs/benchmarks.md section "${section.id}" rewritten\n`);
  }
  bad ||= failed(out);
}
process.exit(bad ? 1 : 0);
