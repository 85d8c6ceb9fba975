// `npx tsx bench/embedded/borrow.ts [--config examples/quickstart/run.yaml] [--pairs 2] [--max-steps N]
//   [--set KEY=VALUE ...] [--write LABEL]`
// What an embedded run gains from its rollout decoder borrowing the learner's cores while the learner waits for
// groups (shared/policy/slot-decoder.ts, SpareCores): pairs of the same `toolrl train` command, as shipped and with
// `--threads H` (H: the decoder's own threads, half the cores, which turns the borrowing off), the order alternating
// from pair to pair so that a machine drifting in speed favours neither. The ratio is fixed / lending, of the RL
// stage (the learner's `ready` line to the command's exit) and of the whole command. The two runs of a pair sample
// the same tokens (the wider session computes the same bits), so the script checks that they validated alike.
// `--write LABEL` puts the block into BENCHMARKS.md between `<!-- bench/embedded: LABEL, begin/end -->`.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { embeddedOrtThreads } from '#shared/runtime/embedded';
import { type BorrowPair, readBorrowRun, renderBorrowReport, type TimedRun } from './borrow-report.ts';
import { replaceSection } from './report.ts';

const REPO = resolve(import.meta.dirname, '../..');
const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'examples/quickstart/run.yaml' },
    pairs: { type: 'string', default: '2' },
    'max-steps': { type: 'string' },
    set: { type: 'string', multiple: true, default: [] },
    write: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'usage: npx tsx bench/embedded/borrow.ts [--config RUN.yaml] [--pairs N] [--max-steps N] [--set KEY=VALUE ...]\n' +
      '         [--write LABEL] [--keep]   (--write: that block of BENCHMARKS.md; --keep: the run folders)\n',
  );
  process.exit(0);
}
const pairCount = Number(values.pairs);
if (!Number.isInteger(pairCount) || pairCount < 1)
  throw new Error(`--pairs: expected a positive integer, got ${values.pairs}`);
const threads = embeddedOrtThreads();
const sets = values.set ?? [];
const common = [values.config, ...sets, ...(values['max-steps'] ? ['--max-steps', values['max-steps']] : [])];
const root = mkdtempSync(join(tmpdir(), 'toolrl-bench-borrow-'));
const load = [loadavg()[0]!];
const loadTimer = setInterval(() => load.push(loadavg()[0]!), 5000);

// The command runs as a child process (the load average keeps being sampled meanwhile); its output goes to NAME.out.
async function once(name: string, lend: boolean): Promise<TimedRun> {
  const workdir = join(root, name);
  const args = ['train', ...common, '--workdir', workdir, ...(lend ? [] : ['--threads', String(threads)])];
  process.stderr.write(`bench/embedded/borrow: ${name}: toolrl ${args.join(' ')}\n`);
  const out = join(root, `${name}.out`);
  const t0 = Date.now();
  const status = await new Promise<number | null>((done, fail) => {
    const log = createWriteStream(out);
    const child = spawn(process.execPath, [join(REPO, 'bin', 'toolrl.mjs'), ...args], { cwd: REPO });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('error', fail);
    child.on('close', (code) => log.end(() => done(code)));
  });
  const t1 = Date.now();
  if (status !== 0) throw new Error(`${name}: toolrl train exited ${status}; its output is in ${out}`);
  const runs = readdirSync(join(workdir, 'runs'));
  if (runs.length !== 1) throw new Error(`${workdir}/runs: expected one run folder, found ${runs.length}`);
  const run = readBorrowRun(join(workdir, 'runs', runs[0]!));
  return { ...run, totalS: (t1 - t0) / 1000, rlS: (t1 - run.readyAt) / 1000 };
}

const pairs: BorrowPair[] = [];
for (let i = 0; i < pairCount; i++) {
  const lendingFirst = i % 2 === 0;
  const first = await once(`pair${i + 1}-${lendingFirst ? 'lending' : 'fixed'}`, lendingFirst);
  const second = await once(`pair${i + 1}-${lendingFirst ? 'fixed' : 'lending'}`, !lendingFirst);
  pairs.push(
    lendingFirst
      ? { lending: first, fixed: second, lendingFirst }
      : { lending: second, fixed: first, lendingFirst },
  );
}
clearInterval(loadTimer);

const text = renderBorrowReport({
  command:
    `npx tsx bench/embedded/borrow.ts --config ${values.config} --pairs ${pairCount}` +
    (values['max-steps'] ? ` --max-steps ${values['max-steps']}` : '') +
    sets.map((o) => ` --set ${o}`).join(''),
  threads,
  cpu: `${cpus()[0]?.model.trim() ?? 'CPU'}, ${cpus().length} cores`,
  load: load.sort((a, b) => a - b),
  pairs,
});
process.stdout.write(`${text}\n`);
if (values.write) {
  const path = join(REPO, 'BENCHMARKS.md');
  writeFileSync(path, replaceSection(readFileSync(path, 'utf8'), values.write, text));
  process.stderr.write(`bench/embedded/borrow: wrote the "${values.write}" block of BENCHMARKS.md\n`);
}
if (values.keep) process.stderr.write(`bench/embedded/borrow: the runs are in ${root}\n`);
else rmSync(root, { recursive: true, force: true });
