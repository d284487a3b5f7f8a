// Rendering results as markdown and rewriting docs/benchmarks.md between markers.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { DEFAULTS } from './wrk.mjs';
import { PAIRS } from './measure.mjs';

const pct = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)} %` : 'n/a');
const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const us = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const ms = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');

/** What the machine was: recorded with every section, since a filtered rerun only rewrites its own. */
export function machine(wrkVersion) {
  const c = cpus();
  return {
    nproc: c.length,
    cpu: c[0]?.model?.trim() ?? 'unknown',
    node: process.version,
    wrk: wrkVersion,
    load: loadavg().map((x) => x.toFixed(2)).join(' '),
  };
}

function verdictCell(r) {
  if (r.verdict === 'ERROR') {
    const why = [];
    if (r.target.non2xx || r.baseline.non2xx) why.push(`${r.target.non2xx + r.baseline.non2xx} non-2xx`);
    if (r.target.socketErrors || r.baseline.socketErrors) why.push(`${r.target.socketErrors + r.baseline.socketErrors} socket errors`);
    return `**ERROR** (${why.join(', ')})`;
  }
  return r.verdict === 'INFO' ? 'info' : `**${r.verdict}**`;
}

function targetCell(t) {
  if (t.minRatio === undefined || t.minRatio === null) return '(information)';
  return `≥ ${pct(t.minRatio)}${t.maxP99Ratio !== undefined ? `, p99 ≤ ${t.maxP99Ratio}×` : ''}`;
}

/** The markdown placed between a section's markers. */
export function renderSection(out, env) {
  const when = out.startedAt.toISOString().replace('T', ' ').slice(0, 16);
  const lines = [];
  lines.push(
    `_Run ${when} UTC · ${env.nproc} × ${env.cpu} · Node ${env.node} · wrk ${env.wrk} · load average at start ${env.load}._`,
    `_Each figure: \`wrk -t${DEFAULTS.threads} -c${DEFAULTS.connections} -d${DEFAULTS.duration} --latency\`, ${PAIRS} interleaved target/baseline pairs after a ${DEFAULTS.warmup} warm-up; req/s and latencies are medians; ratio = median of the per-pair ratios to the baseline measured in the same run. CPU µs/req is the user+system CPU time of the server process and its children (the functions' sandbox process; /proc/PID/stat) divided by the requests wrk completed; CPU ratio = baseline ÷ target CPU per request, i.e. the req/s ratio to expect if both were CPU-bound on a quiet machine (information, not the target)._`,
    '',
  );
  if (out.results.length) {
    lines.push(
      '| Scenario | Baseline | Baseline req/s | Target req/s | Ratio | Target | p50 ms (base / target) | p99 ms (base / target) | CPU µs/req (base / target) | CPU ratio | Result |',
      '|---|---|--:|--:|--:|---|--:|--:|--:|--:|---|',
    );
    for (const r of out.results) {
      lines.push(
        `| ${r.name} | ${r.baselineLabel} | ${int(r.baseline.rps)} | ${int(r.target.rps)} | ${pct(r.ratio)} | ${targetCell(r.targets)} | ${ms(r.baseline.p50)} / ${ms(r.target.p50)} | ${ms(r.baseline.p99)} / ${ms(r.target.p99)} | ${us(r.baseline.cpuUsPerReq)} / ${us(r.target.cpuUsPerReq)} | ${pct(r.cpuRatio)} | ${verdictCell(r)} |`,
      );
    }
    lines.push('', '<details><summary>Every run (req/s) and the target commands</summary>', '');
    for (const r of out.results) {
      lines.push(
        `- ${r.name}: baseline ${r.baseline.runs.map((x) => int(x.rps)).join(', ')}; target ${r.target.runs.map((x) => int(x.rps)).join(', ')}; server CPU use (share of one core) baseline ${r.baseline.runs.map((x) => pct(x.cpuShare)).join(', ')}, target ${r.target.runs.map((x) => pct(x.cpuShare)).join(', ')}; pair ratios ${r.ratios.map(pct).join(', ')}; target RSS after load ${r.targetRssMb?.toFixed(1) ?? 'n/a'} MB`,
        `  \`${r.command}\``,
      );
    }
    lines.push('', '</details>', '');
  }
  if (out.checks.length) {
    lines.push('| Check | Measured | Target | Result |', '|---|--:|---|---|');
    for (const c of out.checks) {
      for (const row of c.rows) {
        const res = row.pass === null || row.pass === undefined ? 'info' : row.pass ? '**PASS**' : '**FAIL**';
        lines.push(`| ${row.metric} | ${row.value} | ${row.target} | ${res}${row.note ? ` (${row.note})` : ''} |`);
      }
    }
    lines.push('');
  }
  for (const e of out.errors) lines.push(`- **ERROR** in ${e.name}: ${e.message.replace(/\|/g, '\\|')}`);
  return lines.join('\n').trimEnd();
}

/** Replaces the text between `<!-- bench:ID:start -->` and `<!-- bench:ID:end -->`, or appends a new section. */
export function rewriteSection(file, id, title, body) {
  const start = `<!-- bench:${id}:start -->`;
  const end = `<!-- bench:${id}:end -->`;
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  if (i !== -1 && j > i) {
    doc = `${doc.slice(0, i + start.length)}\n${body}\n${doc.slice(j)}`;
  } else {
    doc = `${doc.trimEnd()}\n\n## ${title}\n\n${start}\n${body}\n${end}\n`;
  }
  writeFileSync(file, doc);
}

/** True when a section has a failed target or an error (run.mjs exits non-zero then). */
export function failed(out) {
  return (
    out.errors.length > 0 ||
    out.results.some((r) => r.verdict === 'FAIL' || r.verdict === 'ERROR') ||
    out.checks.some((c) => c.rows.some((row) => row.pass === false))
  );
}
