// `npx tsx bench/rollout/index.ts`: the rollout engine at Qwen2.5-0.5B's dimensions (random weights, fp32 and
// int4 bundles) against transformers.js `generate()` on the same bundle and against the memory-bandwidth bound
// (weight bytes one decode step reads over a copy bandwidth measured in this run). Prints a table and rewrites
// the "Rollout engine" section of BENCHMARKS.md.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { LEARNER_PYTHON, REPO_ROOT, tinyBundle } from '../../test/helpers/policy-fixture.ts';
import { copyBandwidth } from './bandwidth.ts';
import { type Measurement, type Row, renderSection } from './report.ts';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    dtypes: { type: 'string', default: 'fp32,int4' },
    n: { type: 'string', default: '8' },
    'prompt-tokens': { type: 'string', default: '128' },
    'new-tokens': { type: 'string', default: '256' },
    threads: { type: 'string', default: '2' },
    preset: { type: 'string', default: 'qwen2.5-0.5b' },
    'skip-reference': { type: 'boolean', default: false },
    write: { type: 'boolean', default: true },
    help: { type: 'boolean', default: false },
  },
  allowNegative: true,
});
if (values.help) {
  process.stdout.write(
    'usage: npx tsx bench/rollout/index.ts [--dtypes fp32,int4] [--n 8] [--prompt-tokens 128] [--new-tokens 256]\n' +
      '         [--threads 2] [--preset qwen2.5-0.5b|qwen2.5-1.5b|tiny] [--skip-reference] [--no-write]\n',
  );
  process.exit(0);
}
const G = Number(values.n);
const shape = ['--prompt-tokens', values['prompt-tokens'], '--new-tokens', values['new-tokens']];
const threads = Number(values.threads);
const log = (msg: string) => process.stderr.write(`[bench/rollout] ${msg}\n`);

async function child(script: string, bundle: string, n: number): Promise<Measurement> {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      join(REPO_ROOT, 'bench', 'rollout', script),
      '--bundle',
      bundle,
      '--n',
      String(n),
      ...shape,
      '--threads',
      String(threads),
    ],
    { cwd: REPO_ROOT, maxBuffer: 16 << 20 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Measurement;
}

async function weightBytes(bundle: string): Promise<number> {
  const { stdout } = await run(LEARNER_PYTHON, [
    join(REPO_ROOT, 'bench', 'rollout', 'weight_bytes.py'),
    join(bundle, 'model.onnx'),
  ]);
  return (JSON.parse(stdout) as { weightBytes: number }).weightBytes;
}

const rows: Row[] = [];
const startLoad = loadavg()[0]!;
for (const dtype of values.dtypes!.split(',')) {
  const quantization = dtype === 'fp32' ? 'none' : (dtype as 'int4' | 'int8');
  log(`${dtype}: building/reusing the ${values.preset} bundle (first run: a few minutes)`);
  const preset = values.preset === 'tiny' ? {} : { preset: values.preset as 'qwen2.5-0.5b' };
  const { bundleDir } = await tinyBundle({ ...preset, quantization });
  const bytes = await weightBytes(bundleDir);
  const bw = Math.max(await copyBandwidth(bytes, 1), await copyBandwidth(bytes, threads));
  log(
    `${dtype}: ${(bytes / 1e6).toFixed(0)} MB read per decode step; copy bandwidth ${(bw / 1e9).toFixed(2)} GB/s`,
  );
  for (const n of [G, 1]) {
    log(`${dtype}: engine, G=${n}`);
    const ours = await child('run-engine.ts', bundleDir, n);
    let ref: Measurement | undefined;
    if (!values['skip-reference']) {
      log(`${dtype}: transformers.js, G=${n}`);
      ref = await child('run-transformers-js.ts', bundleDir, n);
    }
    rows.push({ dtype, G: n, weightBytes: bytes, bandwidth: bw, ours, ref });
  }
}

const machine = `${cpus()[0]?.model ?? 'CPU'}, ${cpus().length} cores, load average ${startLoad.toFixed(1)} at start`;
const command = `npx tsx bench/rollout/index.ts${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`;
const section = renderSection(rows, { machine, command, threads, preset: values.preset! });
process.stdout.write(`\n${section}\n`);
if (values.write) {
  const path = join(REPO_ROOT, 'BENCHMARKS.md');
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n';
  const start = text.indexOf('\n## Rollout engine\n');
  let next: string;
  if (start < 0) next = `${text.trimEnd()}\n\n${section}`;
  else {
    const end = text.indexOf('\n## ', start + 1);
    next = `${text.slice(0, start + 1)}${section}${end < 0 ? '' : `\n${text.slice(end + 1)}`}`;
  }
  writeFileSync(path, next.endsWith('\n') ? next : `${next}\n`);
  log(`wrote the "Rollout engine" section of ${path}`);
}
