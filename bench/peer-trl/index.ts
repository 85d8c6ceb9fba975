// `npx tsx bench/peer-trl/index.ts [--max-steps 16] [--config examples/quickstart/run.yaml] [--seed 0]
// [--set KEY=VALUE ...] [--write]`:
// toolrl's RL stage and TRL's GRPOTrainer side by side, one after the other, on the same starting weights, data,
// tool, reward and hyperparameters. toolrl runs as a user runs it (`toolrl train`, warm start included); TRL then
// starts from the checkpoint toolrl wrote right after its warm start (checkpoints/step-0, Hugging Face format), on
// the same parquet files, with toolrl's calculator and `toolcall` reward reached through bridge.ts, and the
// GRPOConfig trl-config.ts derives from the run config. TRL (pinned with its dependencies in requirements.lock) lives in its own venv,
// .cache/peer-trl-venv, created on first use; it is never a dependency of the product.
//
// Reported for both: the RL stage's wall-clock (from the warm-started policy's validation, v0, to the last
// validation, as bench/learning measures it), seconds per learner step, completions sampled and trained per second,
// and the validation accuracy/reward at each validation. `--write` puts the table into BENCHMARKS.md ("Peer: TRL").
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunConfig } from '#shared/config/resolve';
import { blockKey, type PeerResult, readTrlResult, renderMarkdown, reuseTrlSide } from './report.ts';
import { findPromptCheck, pipelineSpanMs, readToolrlRun, warmStart, warmStartSha256 } from './toolrl-run.ts';
import { knownDifferences, trlGrpoKwargs, trlLora } from './trl-config.ts';

const REPO = resolve(import.meta.dirname, '../..');
const VENV = join(REPO, '.cache', 'peer-trl-venv');
const LOCK = join(REPO, 'bench', 'peer-trl', 'requirements.lock');
const UV = join(REPO, 'gpu-worker', '.venv', 'bin', 'uv');

const { values } = parseArgs({
  options: {
    'max-steps': { type: 'string', default: '16' },
    config: { type: 'string', default: 'examples/quickstart/run.yaml' },
    seed: { type: 'string', default: '0' },
    // Config overrides for both sides (e.g. trainer.eval_every=8), as `toolrl train CONFIG KEY=VALUE` takes them.
    set: { type: 'string', multiple: true, default: [] },
    write: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    // A kept toolrl run folder (--keep) to take the toolrl side from instead of training it again.
    'toolrl-run': { type: 'string' },
    // Completions per TRL forward/backward (gradient accumulation to one step on the batch); default: the batch.
    'trl-micro-batch': { type: 'string' },
    // An earlier invocation's result.json to take TRL's side from (same config, seed, steps; toolrl's mode may differ).
    'trl-result': { type: 'string' },
    report: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'usage: npx tsx bench/peer-trl/index.ts [--max-steps 16] [--config RUN.yaml] [--seed N] [--keep]\n' +
      '         [--set KEY=VALUE ...]   (config overrides for both systems)\n' +
      '         [--toolrl-run RUN_DIR]   (the toolrl side of an earlier, kept run: TRL only is trained)\n' +
      '         [--trl-result FILE]   (the TRL side from an earlier result.json of the same setup: toolrl only is trained)\n' +
      '         [--trl-micro-batch N]   (completions per TRL forward, accumulated into one step; default: the batch)\n' +
      '         [--write]   (rewrites BENCHMARKS.md "Peer: TRL")\n' +
      "       npx tsx bench/peer-trl/index.ts --report DIR/result.json [--write]   (a kept run's table again)\n",
  );
  process.exit(0);
}

// Nothing is fetched from the Hugging Face Hub: the model, tokenizer and data are local files.
const OFFLINE = {
  HF_HUB_OFFLINE: '1',
  HF_DATASETS_OFFLINE: '1',
  TRANSFORMERS_OFFLINE: '1',
  HF_HUB_DISABLE_TELEMETRY: '1',
};

function run(cmd: string, args: string[], what: string): string {
  const r = spawnSync(cmd, args, {
    cwd: REPO,
    env: { ...process.env, ...OFFLINE },
    encoding: 'utf8',
    maxBuffer: 256 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`${what} exited ${r.status ?? r.signal}`);
  return r.stdout;
}

/**
 * TRL and its dependencies in their own venv, from bench/peer-trl/requirements.lock. The lock was compiled with the
 * learner's lock as constraints (see requirements.in), so torch, transformers and accelerate are the learner's own
 * versions and uv links them from its cache instead of downloading them again.
 */
function ensureVenv(): Record<string, string> {
  const stamp = join(VENV, '.lock.sha');
  const want = readFileSync(LOCK, 'utf8');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== want) {
    process.stderr.write(`peer-trl: installing ${LOCK} into ${VENV}\n`);
    rmSync(VENV, { recursive: true, force: true });
    run(UV, ['venv', '-q', '--python', '3.11', VENV], 'uv venv');
    run(UV, ['pip', 'sync', '-q', '--python', join(VENV, 'bin', 'python'), LOCK], 'uv pip sync');
    writeFileSync(stamp, want);
  }
  const freeze = run(UV, ['pip', 'freeze', '--python', join(VENV, 'bin', 'python')], 'uv pip freeze');
  return Object.fromEntries(
    freeze
      .trim()
      .split('\n')
      .map((l) => l.split('=='))
      .filter((p): p is [string, string] => p.length === 2),
  );
}

/** The TRL script reads one training and one validation file (what the quick start has). */
function oneFile(value: string | string[] | undefined, key: string, configPath: string): string {
  const files = value === undefined ? [] : [value].flat();
  if (files.length !== 1) throw new Error(`${configPath}: ${key} must name exactly one parquet file here`);
  return resolve(dirname(configPath), files[0]!);
}

function main(): void {
  const steps = Number.parseInt(values['max-steps'], 10);
  const seed = Number.parseInt(values.seed, 10);
  if (!(steps > 0) || !(seed >= 0)) throw new Error('--max-steps must be positive and --seed non-negative');
  const microBatch =
    values['trl-micro-batch'] === undefined ? undefined : Number.parseInt(values['trl-micro-batch'], 10);
  const configPath = resolve(REPO, values.config);
  const overrides = [`trainer.seed=${seed}`, `rollout.seed=${seed}`, ...(values.set ?? [])];
  const { config } = loadRunConfig(
    readFileSync(configPath, 'utf8'),
    configPath,
    overrides,
    dirname(configPath),
  );
  // TRL's venv first (when TRL runs here), so a failed install costs no toolrl run.
  const venvVersions = values['trl-result'] ? undefined : ensureVenv();
  const work = mkdtempSync(join(tmpdir(), 'toolrl-peer-trl-'));
  const load = loadavg()[0]!;

  // 1. toolrl, as the README runs it; every checkpoint kept, so step-0 (right after the warm start) is there. Or the
  // toolrl side of an earlier invocation's kept folder (--toolrl-run), timed from its own pipeline.log.
  let runDir: string;
  let toolrl: ReturnType<typeof readToolrlRun>;
  if (values['toolrl-run']) {
    runDir = resolve(values['toolrl-run']);
    const span = pipelineSpanMs(runDir);
    toolrl = readToolrlRun(runDir, span.start, span.end, config);
  } else {
    process.stderr.write(
      `peer-trl: toolrl train ${values.config} ${overrides.join(' ')} --max-steps ${steps}\n`,
    );
    const t0 = Date.now();
    const out = run(
      process.execPath,
      [
        join(REPO, 'bin', 'toolrl.mjs'),
        'train',
        configPath,
        ...overrides,
        'trainer.keep_checkpoints=1000',
        '--max-steps',
        String(steps),
        '--workdir',
        join(work, 'toolrl'),
        '--json',
      ],
      'toolrl train',
    );
    const summary = JSON.parse(out.trim().split('\n').at(-1)!);
    toolrl = readToolrlRun(summary.runDir, t0, Date.now(), config);
    runDir = summary.runDir;
  }
  const warm = warmStart(runDir, process.env.TOOLRL_MODEL_CACHE ?? join(REPO, '.cache', 'models'));
  const warmSha = warmStartSha256(warm);
  const command = `npx tsx bench/peer-trl/index.ts --max-steps ${steps} --seed ${seed}${values.config === 'examples/quickstart/run.yaml' ? '' : ` --config ${values.config}`}${(values.set ?? []).map((o) => ` --set ${o}`).join('')}${microBatch ? ` --trl-micro-batch ${microBatch}` : ''}${values['toolrl-run'] ? ' --toolrl-run DIR' : ''}${values['trl-result'] ? ' --trl-result FILE' : ''}`;

  // 2. TRL from the same weights, or its side of an earlier invocation's result (--trl-result).
  let trl: PeerResult['trl'];
  let versions: Record<string, string>;
  let trlFrom: PeerResult['trlFrom'];
  if (values['trl-result']) {
    const prev = JSON.parse(readFileSync(resolve(values['trl-result']), 'utf8')) as PeerResult;
    trl = reuseTrlSide(prev, command, warmSha);
    versions = prev.versions;
    trlFrom = { date: prev.date, command: prev.command };
  } else {
    versions = venvVersions ?? ensureVenv();
    const specPath = join(work, 'trl-spec.json');
    const toolSchemas = (config.tools?.tools ?? []).map((t) => t.tool_schema).filter((s) => s !== undefined);
    const spec = {
      repo: REPO,
      model: warm.model,
      ...(warm.adapter ? { adapter: warm.adapter, lora: trlLora(config) } : {}),
      // model.chat_template as text (the run config resolves a name or file): what toolrl rendered prompts with.
      ...(config.model.chat_template ? { chatTemplate: config.model.chat_template } : {}),
      train: oneFile(config.data.train, 'data.train', configPath),
      val: oneFile(config.data.val, 'data.val', configPath),
      out: join(work, 'trl'),
      seed,
      bridge: [
        process.execPath,
        join(REPO, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
        join(REPO, 'bench', 'peer-trl', 'bridge.ts'),
        configPath,
      ],
      toolSchemas,
      promptCheck: findPromptCheck(runDir),
      grpo: trlGrpoKwargs(config, { steps, seed, ...(microBatch ? { microBatch } : {}) }),
    };
    writeFileSync(specPath, JSON.stringify(spec, null, 1));
    process.stderr.write(
      `peer-trl: TRL GRPOTrainer from ${warm.model}${warm.adapter ? ` + ${warm.adapter}` : ''}\n`,
    );
    const t1 = Date.now();
    run(join(VENV, 'bin', 'python'), [join(REPO, 'bench', 'peer-trl', 'trl_grpo.py'), specPath], 'TRL');
    trl = readTrlResult(join(work, 'trl', 'result.json'), t1, Date.now(), config);
  }

  const result: PeerResult = {
    command,
    block: blockKey(config.name, config.trainer.deterministic),
    mode: config.trainer.deterministic ? 'deterministic' : 'asynchronous',
    date: new Date().toISOString().slice(0, 10),
    cores: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    load,
    loadAfter: loadavg()[0]!,
    steps,
    toolrl,
    trl,
    versions: {
      trl: versions['trl'] ?? '?',
      transformers: versions['transformers'] ?? '?',
      torch: versions['torch'] ?? '?',
      accelerate: versions['accelerate'] ?? '?',
      datasets: versions['datasets'] ?? '?',
    },
    differences: [...knownDifferences(config, microBatch ? { microBatch } : {}), ...(trl.notes ?? [])],
    warmStartSha256: warmSha,
    ...(trlFrom ? { trlFrom } : {}),
  };
  writeFileSync(join(work, 'result.json'), JSON.stringify(result, null, 1));
  if (values.keep) process.stderr.write(`runs kept in ${work} (result: ${join(work, 'result.json')})\n`);
  else rmSync(work, { recursive: true, force: true });
  publish(result);
}

/** Prints the table; with --write, puts it into BENCHMARKS.md between its markers. */
function publish(result: PeerResult): void {
  const md = renderMarkdown(result);
  process.stdout.write(`${md}\n`);
  if (!values.write) return;
  const path = join(REPO, 'BENCHMARKS.md');
  const key = result.block ?? 'bench/peer-trl';
  const BEGIN = `<!-- ${key}:begin -->`;
  const END = `<!-- ${key}:end -->`;
  const text = readFileSync(path, 'utf8');
  const i = text.indexOf(BEGIN);
  const j = text.indexOf(END);
  if (i < 0 || j < 0) throw new Error(`BENCHMARKS.md has no ${BEGIN} ... ${END} block`);
  writeFileSync(path, `${text.slice(0, i)}${BEGIN}\n${md}\n${END}${text.slice(j + END.length)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // --report: the table of a kept run's result.json again (e.g. to --write it), without running anything.
  if (values.report) publish(JSON.parse(readFileSync(values.report, 'utf8')) as PeerResult);
  else main();
}
