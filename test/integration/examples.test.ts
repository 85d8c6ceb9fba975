// Every example under examples/ fits together and runs, in two checks:
// - fit, without a model: for every shipped row (train and val), the tools the example's config offers that
//   row run a demonstrated call for real (the ToolBench APIs through a real server over the shipped cache),
//   and the example's reward scores the demonstrated episode (the call, its real result, then the row's gold
//   answer) with every component it declares and full marks on its correctness part: data, tools and reward
//   agree;
// - run: the example's run.yaml, only scaled down (tiny model, 2 samples, short turns), trains 2 learner steps
//   on the embedded default: the run completes, the learner reports the algorithm's metrics, and every
//   trajectory is scored with the reward's components.
// The run's random tiny model is not warm-started to write tool calls: on these ~1k-token prompts a 2-layer
// model still writes calls only by chance after a 40-step SFT (measured p(the demonstrated call) of 0.3-3%
// per sample; none for ToolBench's per-row APIs), and those 40 steps alone cost 40 s per example on a quiet
// machine. Tool calls made by the model inside a run are covered by validation.test.ts, pipeline-smoke and
// the quickstart, on short prompts where a warm start is cheap.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { parseRunConfig } from '#shared/config/resolve';
import { readDataset } from '#shared/data/dataset';
import { episodeRowTools } from '#shared/episode/user-turns';
import { getParser } from '#shared/parsing/registry';
import { buildReward, goldAnswers, normaliseRewardInput } from '#shared/rewards/index';
import { train } from '#shared/runtime/train';
import type { RunConfig } from '#shared/schemas/config/run';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { type Trajectory, TrajectorySchema } from '#shared/schemas/trajectory';
import { buildToolRegistry } from '#shared/tools/registry';
import type { RunningServer } from '#shared/tools/serve';
import { serveToolBench, ToolBenchCache } from '#shared/tools/toolbench/server';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';

const EXAMPLES = join(REPO_ROOT, 'examples');

type Call = { name: string; arguments: Record<string, unknown> };

/** A demonstrated episode for a row: one call, then the last turn (an answer, or ToolBench's Finish call). */
interface Demo {
  call: Call;
  last: (gold: string) => { text: string } | { call: Call };
}

interface ExampleCase {
  dir: string;
  config: string;
  demo: (row: DatasetRow) => Demo;
  /** Reward components every scored episode carries (and the run logs as `reward/<name>` step metrics). */
  rewardParts: string[];
  /** The component a demonstrated episode with the gold answer scores 1 on. */
  fullMarks: string;
  /** Algorithm-specific step metrics the learner must report. */
  stepMetrics?: string[];
}

/** ToolBench rows: the first relevant API with arguments the shipped cache answers. */
const TOOLBENCH_ARGS: Record<string, Record<string, unknown>> = {
  current_weather_for_weatherapi: { city: 'Paris' },
  forecast_for_weatherapi: { city: 'Cairo', days: 5 },
  convert_for_currency_exchange: { is_from: 'USD', to: 'EUR', amount: 250 },
  latest_rates_for_currency_exchange: { base: 'JPY' },
  search_movie_for_movie_database: { title: 'Inception' },
  movie_details_for_movie_database: { movie_id: 'tt1375666' },
};

const toolbenchDemo = (row: DatasetRow): Demo => {
  const name = (row.reward_model.ground_truth as { relevant_apis: string[] }).relevant_apis[0]!;
  return {
    call: { name, arguments: TOOLBENCH_ARGS[name]! },
    last: (gold) => ({
      call: { name: 'Finish', arguments: { return_type: 'give_answer', final_answer: gold || 'Done.' } },
    }),
  };
};

const code = (finalText: (gold: string) => string) => (): Demo => ({
  call: { name: 'code_interpreter', arguments: { code: 'print(6 * 7)' } },
  last: (gold) => ({ text: finalText(gold) }),
});

const CASES: ExampleCase[] = [
  {
    dir: 'multiturn-toolcall',
    config: 'run.yaml',
    demo: () => ({
      call: { name: 'calculator', arguments: { expression: '6 * 7' } },
      last: (gold) => ({ text: `The answer is ${gold}.` }),
    }),
    rewardParts: [
      'toolcall',
      'toolcall/correctness',
      'toolcall/necessity',
      'toolcall/result_use',
      'toolcall/final_answer',
      'toolcall/coherence',
    ],
    fullMarks: 'toolcall/final_answer',
  },
  {
    dir: 'retool',
    config: 'run.yaml',
    demo: code((gold) => `So the answer is \\boxed{${gold}}.`),
    rewardParts: ['retool', 'retool/correct', 'retool/malformed_calls'],
    fullMarks: 'retool/correct',
  },
  {
    dir: 'search',
    config: 'run.yaml',
    demo: () => ({
      call: { name: 'search', arguments: { query_list: ['capital of France'] } },
      last: (gold) => ({ text: `<answer> ${gold} </answer>` }),
    }),
    rewardParts: ['exact_match', 'exact_match/exact_match', 'exact_match/answer_found'],
    fullMarks: 'exact_match/exact_match',
  },
  {
    dir: 'toolbench',
    config: 'run.yaml',
    demo: toolbenchDemo,
    rewardParts: [
      'toolbench',
      'toolbench/format',
      'toolbench/function_call',
      'toolbench/finish',
      'toolbench/error_rate',
      'toolbench/finish_bonus',
    ],
    fullMarks: 'toolbench/finish_bonus',
    stepMetrics: ['kl_loss'],
  },
  {
    dir: 'toolbench',
    config: 'run-ppo.yaml',
    demo: toolbenchDemo,
    rewardParts: ['toolbench', 'toolbench/function_call', 'toolbench/finish'],
    fullMarks: 'toolbench/finish_bonus',
    stepMetrics: ['vf_loss', 'kl_in_reward', 'critic_updates'],
  },
  {
    dir: 'toolgrpo',
    config: 'run.yaml',
    demo: code((gold) => `\\boxed{${gold}}`),
    rewardParts: ['retool', 'retool/correct', 'format', 'format/final_answer'],
    fullMarks: 'retool/correct',
  },
];

/** `dir/config` titles, unquoted, so that `vitest -t 'retool/run.yaml'` picks one example. */
const NAMED = CASES.map((c) => [`${c.dir}/${c.config}`, c] as const);

let toolbench: { server: RunningServer; cache: ToolBenchCache };
const scratch: string[] = [];

beforeAll(async () => {
  const cache = new ToolBenchCache(join(EXAMPLES, 'toolbench', 'cache'));
  toolbench = { server: await serveToolBench(cache, { host: '127.0.0.1', port: 0 }), cache };
});

afterAll(async () => {
  await toolbench?.server.close();
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (v ?? {}) as Obj;

/** The example's config with the ToolBench server of this test; nothing else changed. */
function withServer(raw: Obj): Obj {
  const c = structuredClone(raw);
  const tools = obj(c.tools);
  if (Array.isArray(tools.tools))
    tools.tools = tools.tools.map((t: Obj) =>
      t.kind === 'toolbench'
        ? { ...t, config: { ...obj(t.config), service_url: `${toolbench.server.url}/virtual` } }
        : t,
    );
  return c;
}

/**
 * Scaled down for 2 CPU cores: the tiny model (fp32, keeping a LoRA block), at most 2 samples, 2-turn
 * episodes of short turns, 2 prompts per step, every group trained on, no validation (its own test covers
 * it). Tools, reward and algorithm stay the example's own.
 */
function scaledDown(raw: Obj): Obj {
  const c = withServer(raw);
  const model = obj(c.model);
  c.model = { ...(model.lora ? { lora: model.lora } : {}), path: 'tiny', dtype: 'fp32' };
  // The tiny model's byte-level BPE spends more tokens on a prompt than Qwen's tokenizer.
  c.data = { ...obj(c.data), max_prompt_length: 8192 };
  const rollout = obj(c.rollout);
  c.rollout = {
    ...rollout,
    n: Math.min(Number(rollout.n ?? 8), 2),
    max_new_tokens: 32,
    seed: 3,
    multi_turn: {
      ...obj(rollout.multi_turn),
      max_turns: 2,
      max_tool_calls: 1,
      max_parallel_calls: 1,
      max_total_response_length: 96,
    },
  };
  c.algorithm = { ...obj(c.algorithm), filter_groups: false };
  // A separate critic is the tiny model too; mini-batches of one prompt, and a warm-up of one step of the two.
  if (c.critic) c.critic = { ...obj(c.critic), model: { path: 'tiny' }, ppo_mini_batch_size: 1 };
  const trainer = obj(c.trainer);
  // Packed attention is O(tokens^2) on CPU: one ~1k-token sequence per micro-batch.
  c.trainer = {
    ...trainer,
    batch_prompts: 2,
    micro_batch_tokens: 1024,
    eval_every: 0,
    save_every: 100,
    ...(trainer.ppo_mini_batch_size !== undefined ? { ppo_mini_batch_size: 1 } : {}),
    ...(trainer.critic_warmup !== undefined ? { critic_warmup: 1 } : {}),
  };
  c.logging = { tensorboard: false, progress_interval_s: 60 };
  return c;
}

function trajectoriesOf(runDir: string): Trajectory[] {
  const root = join(runDir, 'trajectories');
  return readdirSync(root).flatMap((group) =>
    readdirSync(join(root, group)).map((f) =>
      TrajectorySchema.parse(JSON.parse(readFileSync(join(root, group, f), 'utf8'))),
    ),
  );
}

/** A call written the way the example's parser reads it (Hermes tags, or a ```python block for code_block). */
const written = (parsed: RunConfig, call: Call): string => {
  const mt = parsed.rollout.multi_turn;
  return getParser(mt.tool_parser_format).render([call], { codeBlock: mt.code_block });
};

describe('examples: shipped data', () => {
  it.each([...new Set(CASES.map((c) => c.dir))])('%s/make-data.sh regenerates it byte for byte', (dir) => {
    const out = mkdtempSync(join(tmpdir(), `toolrl-make-data-${dir}-`));
    scratch.push(out);
    const made = spawnSync('bash', [join(EXAMPLES, dir, 'make-data.sh'), out], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    for (const split of ['train', 'val'])
      expect(
        readFileSync(join(out, `${split}.parquet`)).equals(
          readFileSync(join(EXAMPLES, dir, 'data', `${split}.parquet`)),
        ),
        split,
      ).toBe(true);
  });

  // BFCL's subset comes from bfcl-eval's own data through its loader (the BFCL environment, made on first use);
  // SmolLM2's word problems from its seeded streams (the train and demonstration files must stay what the seeds in
  // examples/smollm2/README.md were trained on).
  it.each([
    ['bfcl', ['format', 'base', 'full', 'val']],
    ['smollm2', ['train', 'val', 'val-one-phrasing', 'sft', 'ptx']],
  ])('%s/make-data.ts regenerates it byte for byte', (dir, names) => {
    const out = mkdtempSync(join(tmpdir(), `toolrl-make-data-${dir}-`));
    scratch.push(out);
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    const made = spawnSync(tsx, [join(EXAMPLES, dir, 'make-data.ts'), out], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    });
    expect(made.status, made.stderr).toBe(0);
    for (const name of names)
      expect(
        readFileSync(join(out, `${name}.parquet`)).equals(
          readFileSync(join(EXAMPLES, dir, 'data', `${name}.parquet`)),
        ),
        name,
      ).toBe(true);
  });
  // The trials' training sets (examples/smollm2/README.md, "Tried for the 70%"): `--verbs`, `--many-verbs` and
  // `--pairs` change train.parquet only, so a trial's warm start and validation are the recipe's; the verb banks'
  // verbs are new to both held-out sets (but "sold", which training's own phrasings use too), and a pair differs
  // only in its verbs.
  it('smollm2/make-data.ts --verbs, --many-verbs and --pairs change only train.parquet, in words validation never uses', async () => {
    const { DEV_TEMPLATES, VAL_TEMPLATES } = await import('../../examples/smollm2/phrasings.ts');
    const { GAIN_VERBS, LOSS_VERBS, MORE_GAIN_VERBS, MORE_LOSS_VERBS } = await import(
      '../../examples/smollm2/verbs.ts'
    );
    const heldOut = [...Object.values(VAL_TEMPLATES), ...Object.values(DEV_TEMPLATES)]
      .flat()
      .map((t) => t({ kind: 'sub-add', a: 1, b: 2, c: 3 }, 'N', 'things'));
    const bank = [...GAIN_VERBS, ...LOSS_VERBS, ...MORE_GAIN_VERBS, ...MORE_LOSS_VERBS];
    const shared = bank.filter((v) => heldOut.some((text) => new RegExp(`\\b${v}\\b`).test(text)));
    expect(shared).toEqual(['sold']);
    expect(new Set(bank).size).toBe(bank.length);
    const tsx = join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
    for (const flag of ['--verbs', '--many-verbs', '--pairs']) {
      const out = mkdtempSync(join(tmpdir(), 'toolrl-make-data-smollm2-'));
      scratch.push(out);
      const made = spawnSync(tsx, [join(EXAMPLES, 'smollm2', 'make-data.ts'), out, flag], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      });
      expect(made.status, made.stderr).toBe(0);
      for (const name of ['val', 'val-one-phrasing', 'sft', 'ptx'])
        expect(
          readFileSync(join(out, `${name}.parquet`)).equals(
            readFileSync(join(EXAMPLES, 'smollm2', 'data', `${name}.parquet`)),
          ),
          `${flag} ${name}`,
        ).toBe(true);
      const rows = await readDataset(join(out, 'train.parquet'));
      expect(rows).toHaveLength(512);
      const text = (r: DatasetRow) => String(r.prompt[0]!.content);
      const shipped = new Set(
        (await readDataset(join(EXAMPLES, 'smollm2', 'data', 'train.parquet'))).map(text),
      );
      expect(rows.filter((r) => !shipped.has(text(r))).length, flag).toBeGreaterThan(100);
      // The wide bank's own verbs are asked (its frames say "Then Emma crafted 837 nails."), the narrow bank's not.
      const wideVerbs = [...MORE_GAIN_VERBS, ...MORE_LOSS_VERBS].filter((v) =>
        rows.some((r) => new RegExp(`\\b${v}\\b`).test(text(r))),
      );
      if (flag === '--many-verbs') expect(wideVerbs.length).toBeGreaterThan(60);
      else expect(wideVerbs.length, flag).toBeLessThan(10);
      if (flag === '--pairs') {
        // A mirrored pair: rows 2k and 2k+1 ask about the same numbers, and their expressions differ in the signs only.
        const expr = (r: DatasetRow) => String(r.extra_info.expression);
        const numbers = (r: DatasetRow) => text(r).match(/\d+/g)?.join(' ');
        const mirrored = [];
        for (let i = 0; i < rows.length; i += 2) {
          const [x, y] = [rows[i]!, rows[i + 1]!];
          const signless = (r: DatasetRow) => expr(r).replace(/[-+]/g, '±');
          if (numbers(x) === numbers(y) && expr(x) !== expr(y) && signless(x) === signless(y))
            mirrored.push(i);
        }
        expect(mirrored.length).toBeGreaterThan(50);
      }
    }
  });
});

describe('examples: data, tools and reward fit together', () => {
  it.each(NAMED)('%s', async (_name, { dir, config, demo, rewardParts, fullMarks }) => {
    const base = join(EXAMPLES, dir);
    const parsed = parseRunConfig(
      toYaml(withServer(parseYaml(readFileSync(join(base, config), 'utf8')))),
      config,
    );
    const registry = await buildToolRegistry(parsed.tools, { baseDir: base });
    const reward = await buildReward(parsed.reward, { baseDir: base });
    const hitsBefore = toolbench.cache.hits;
    try {
      const rows = [
        ...(await readDataset(join(base, 'data', 'train.parquet'))),
        ...(await readDataset(join(base, 'data', 'val.parquet'))),
      ];
      for (const row of rows) {
        const where = `${dir} row ${JSON.stringify(row.extra_info.index)}`;
        const view = registry.forRow(episodeRowTools(row));
        const tools = view.schemas();
        const { call, last } = demo(row);
        expect(
          tools.map((t) => t.function.name),
          where,
        ).toContain(call.name);
        const result = await view.call(call);
        expect(result.error, where).toBeNull();
        const gold = goldAnswers(row.reward_model.ground_truth)[0] ?? '';
        const end = last(gold);
        const finish = 'call' in end ? await view.call(end.call) : null;
        if (finish) expect(finish.error, where).toBeNull();
        const input = normaliseRewardInput(
          {
            turns: [
              { text: written(parsed, call), toolCalls: [{ ...call, result }], stop: 'tool_call' },
              'call' in end
                ? {
                    text: written(parsed, end.call),
                    toolCalls: [{ ...end.call, result: finish! }],
                    stop: 'tool_call',
                  }
                : { text: end.text, stop: 'eos' },
            ],
            finishReason: 'eos',
            ground_truth: row.reward_model.ground_truth,
            tools,
            data_source: row.data_source,
            extra_info: row.extra_info,
          },
          parsed.rollout.multi_turn.tool_parser_format,
        );
        const { components } = await reward(input);
        for (const part of rewardParts)
          expect(components[part], `${where}: ${part}`).toEqual(expect.any(Number));
        expect(components[fullMarks], `${where}: ${fullMarks}`).toBe(1);
      }
      if (dir === 'toolbench')
        expect(toolbench.cache.hits - hitsBefore, 'cached API answers').toBe(rows.length);
    } finally {
      await registry.close();
    }
  });
});

describe('examples run on the embedded default with the tiny model', () => {
  it.each(NAMED)('%s', async (_name, { dir, config, rewardParts, stepMetrics }) => {
    const work = mkdtempSync(join(tmpdir(), `toolrl-example-${dir}-`));
    scratch.push(work);
    const copy = join(work, dir);
    cpSync(join(EXAMPLES, dir), copy, { recursive: true });
    const configPath = join(copy, `test-${config}`);
    const scaled = scaledDown(parseYaml(readFileSync(join(copy, config), 'utf8')));
    writeFileSync(configPath, toYaml(scaled));

    const result = await train({ configPath, workdir: join(work, 'runs'), maxSteps: 2, ortThreads: 1 });

    expect(result.reason).toBeNull();
    expect(result.status).toBe('completed');
    expect(result.learner?.step).toBe(2);
    const steps = readFileSync(result.metricsPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Obj);
    expect(steps.map((s) => s.step)).toEqual([1, 2]);
    for (const s of steps) {
      for (const part of rewardParts)
        expect(s[`reward/${part}`], `reward/${part}`).toEqual(expect.any(Number));
      for (const m of stepMetrics ?? []) expect(s[m], m).toEqual(expect.any(Number));
      expect(s.loss_tokens as number).toBeGreaterThan(0);
    }
    // Each step trained 2 prompts x n samples; groups still in flight when the run stopped are stored too.
    const n = Number(obj(scaled.rollout).n);
    expect(steps.map((s) => s.trajectories)).toEqual([2 * n, 2 * n]);
    const trajectories = trajectoriesOf(result.runDir);
    expect(trajectories.length).toBeGreaterThanOrEqual(4 * n);
    for (const t of trajectories) {
      expect(t.turns.length).toBeGreaterThan(0);
      for (const part of rewardParts) expect(t.rewardComponents[part], part).toEqual(expect.any(Number));
    }
  });
});
