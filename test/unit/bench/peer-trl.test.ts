// bench/peer-trl without TRL installed: the GRPOConfig it derives from a run config, and how a TRL completion
// becomes a reward input scored by toolrl's own `toolcall` reward.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadRunConfig } from '#shared/config/resolve';
import { parseToolCalls } from '#shared/parsing/registry';
import { buildReward } from '#shared/rewards/build';
import { normaliseRewardInput } from '#shared/rewards/input';
import type { ToolResult } from '#shared/schemas/tool-result';
import { callKey, episodeFromCompletion } from '../../../bench/peer-trl/bridge.ts';
import {
  blockKey,
  type PeerResult,
  renderMarkdown,
  type SideResult,
  secondsToReward,
  trlNotes,
} from '../../../bench/peer-trl/report.ts';
import { warmStart } from '../../../bench/peer-trl/toolrl-run.ts';
import { knownDifferences, trlGrpoKwargs, trlLora } from '../../../bench/peer-trl/trl-config.ts';

const QUICKSTART = resolve(import.meta.dirname, '../../../examples/quickstart/run.yaml');
const SMOLLM2 = resolve(import.meta.dirname, '../../../examples/smollm2/run.yaml');
// The example fine-tunes every weight; these give it the LoRA it had before 2026-12-04 (rank 16 on every layer) and
// that LoRA on the top 8 blocks only.
const LORA = 'model.lora={rank: 16, alpha: 32}';
const TOP8 = 'model.lora.layers_to_transform=[22,23,24,25,26,27,28,29]';
const load = (overrides: string[] = [], path = QUICKSTART) =>
  loadRunConfig(readFileSync(path, 'utf8'), path, overrides, dirname(path)).config;

describe('trlGrpoKwargs', () => {
  it("gives TRL the quick start's G, batch, schedule, clip range, loss and token budgets", () => {
    const k = trlGrpoKwargs(load(), { steps: 16, seed: 3 });
    expect(k).toMatchObject({
      num_generations: 8,
      per_device_train_batch_size: 64, // 8 questions x 8 samples, one optimizer step on them
      gradient_accumulation_steps: 1,
      steps_per_generation: 1,
      max_steps: 16,
      learning_rate: 2e-4,
      lr_scheduler_type: 'cosine_with_min_lr',
      lr_scheduler_kwargs: { min_lr_rate: 0.1 },
      epsilon: 0.2,
      epsilon_high: 0.28,
      loss_type: 'dapo', // token-mean
      scale_rewards: 'group',
      beta: 0,
      temperature: 1,
      max_completion_length: 160, // max_total_response_length
      generation_kwargs: { max_new_tokens: 48 }, // each turn's own budget
      max_tool_calling_iterations: 2, // min(max_tool_calls 2, max_turns 3 - 1)
      num_generations_eval: 4,
      eval_steps: 16,
      seed: 3,
    });
    expect((k['per_device_eval_batch_size'] as number) % 4).toBe(0);
  });

  it('follows the config: constant lr, Dr. GRPO, fewer turns', () => {
    const k = trlGrpoKwargs(
      load([
        'trainer.lr_scheduler=constant',
        'algorithm.adv_estimator=dr_grpo',
        'rollout.multi_turn.max_turns=2',
      ]),
      { steps: 4, seed: 0 },
    );
    expect(k['lr_scheduler_type']).toBe('constant');
    expect(k['lr_scheduler_kwargs']).toBeUndefined();
    expect(k['loss_type']).toBe('dr_grpo');
    expect(k['scale_rewards']).toBe('none');
    expect(k['max_tool_calling_iterations']).toBe(1);
  });

  it("maps warmup-stable-decay to Hugging Face's own, decay steps and floor included", () => {
    const k = trlGrpoKwargs(
      load(['trainer.lr_scheduler=wsd', 'trainer.decay_steps=10', 'trainer.min_lr_ratio=0.2']),
      { steps: 30, seed: 0 },
    );
    expect(k['lr_scheduler_type']).toBe('warmup_stable_decay');
    expect(k['lr_scheduler_kwargs']).toEqual({
      num_decay_steps: 10,
      min_lr_ratio: 0.2,
      decay_type: 'cosine',
    });
  });

  it('refuses what it cannot map, naming it', () => {
    expect(() => trlGrpoKwargs(load(['algorithm.adv_estimator=rloo']), { steps: 1, seed: 0 })).toThrow(
      /adv_estimator rloo/,
    );
  });

  it('trains a batch in micro-batches that accumulate into one step on it', () => {
    const k = trlGrpoKwargs(load(), { steps: 8, seed: 0, microBatch: 8 });
    expect(k).toMatchObject({
      per_device_train_batch_size: 8,
      gradient_accumulation_steps: 8, // one optimizer step on the 64 completions
      steps_per_generation: 8, // the 64 generated at once, before the first micro-batch
      max_steps: 8,
    });
    expect(() => trlGrpoKwargs(load(), { steps: 1, seed: 0, microBatch: 24 })).toThrow(
      /micro-batch of 24 .* 64/,
    );
  });

  it("gives the real-model example's bf16, template-free kwargs, and a LoRA as peft's LoraConfig", () => {
    const config = load([], SMOLLM2);
    const k = trlGrpoKwargs(config, { steps: 8, seed: 0 });
    expect(k).toMatchObject({
      bf16: true, // model.dtype bf16 (fp32 in the quick start)
      learning_rate: 3e-5,
      lr_scheduler_type: 'constant',
      max_completion_length: 160,
      generation_kwargs: { max_new_tokens: 64 },
      max_tool_calling_iterations: 2,
      num_generations_eval: 4,
    });
    expect(trlGrpoKwargs(load(), { steps: 1, seed: 0 })['bf16']).toBe(false);
    // the example fine-tunes every weight: no peft config
    expect(trlLora(config)).toBeUndefined();
    // a LoRA on every layer: no layers_to_transform, as peft's default
    expect(trlLora(load([LORA], SMOLLM2))).toEqual({
      r: 16,
      lora_alpha: 32,
      lora_dropout: 0,
      target_modules: ['down_proj', 'gate_proj', 'k_proj', 'o_proj', 'q_proj', 'up_proj', 'v_proj'],
      task_type: 'CAUSAL_LM',
    });
    // and a config that names its layers hands them on
    expect(trlLora(load([LORA, TOP8], SMOLLM2))).toMatchObject({
      layers_to_transform: [22, 23, 24, 25, 26, 27, 28, 29],
    });
    expect(trlLora(load())).toBeUndefined();
    // the chat template TRL renders with is the run's resolved text, the smollm2 template (ChatML + Hermes tools)
    expect(config.model.chat_template).toContain('You are a helpful AI assistant named SmolLM');
    expect(config.model.chat_template).toContain('{%- for tool in tools %}');
  });

  it('names the LoRA, bf16, int8 rollouts and the mode among the differences of the real-model example', () => {
    const lines = knownDifferences(load([], SMOLLM2), { microBatch: 8 }).join('\n');
    expect(lines).not.toMatch(/LoRA/); // full fine-tuning
    expect(knownDifferences(load([LORA], SMOLLM2), { microBatch: 8 }).join('\n')).toMatch(
      /LoRA \(r 16, alpha 32\)/,
    );
    expect(knownDifferences(load([LORA, TOP8], SMOLLM2), { microBatch: 8 }).join('\n')).toMatch(
      /LoRA \(r 16, alpha 32, layers 22-29\)/,
    );
    expect(lines).toMatch(/int8 weights/);
    expect(lines).toMatch(/^bf16:/m);
    expect(lines).toMatch(/8 completions a forward .* 16 accumulated/); // 16 questions x 8 samples
    expect(lines).toMatch(/deterministic mode/);
    const async = knownDifferences(load(['trainer.deterministic=false'], SMOLLM2)).join('\n');
    expect(async).toMatch(/asynchronous mode/);
    expect(knownDifferences(load()).join('\n')).not.toMatch(/LoRA|^bf16:|int8/m);
  });

  it('lists the differences that apply to the config', () => {
    expect(knownDifferences(load()).join('\n')).toMatch(/filter_groups/);
    expect(knownDifferences(load(['algorithm.filter_groups=false'])).join('\n')).not.toMatch(/filter_groups/);
  });
});

describe('episodeFromCompletion', () => {
  const call = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "685 - 511"}}\n</tool_call>';
  const response = '<|im_end|>\n<|im_start|>user\n<tool_response>\n174\n</tool_response><|im_end|>\n';
  const config = load();

  async function score(completion: string, results: Map<string, ToolResult>) {
    const reward = await buildReward(config.reward, { baseDir: dirname(QUICKSTART) });
    const file = episodeFromCompletion(completion, '174', results, ['calculator'], 'hermes', parseToolCalls);
    return { file, out: await reward(normaliseRewardInput(file)) };
  }

  // What the calculator returned when TRL executed the call (ToolResult as the registry gives it; written out so
  // the test does not depend on how fast a worker thread starts on a loaded machine).
  const executed = new Map<string, ToolResult>([
    [
      callKey('calculator', { expression: '685 - 511' }),
      { ok: true, output: '174', error: null, truncated: false },
    ],
  ]);

  it('scores a call whose real result reaches the boxed answer as toolrl scores it: 1.0', async () => {
    const { file, out } = await score(
      `${call}${response}<|im_start|>assistant\n\\boxed{174}<|im_end|>`,
      executed,
    );
    expect(file.turns.map((t) => t.stop)).toEqual(['tool_call', 'eos']);
    expect(file.finishReason).toBe('eos');
    expect(out.score).toBeCloseTo(1, 9);
  });

  it('gives no tool credit to an answer without a call, and none to a call TRL never executed', async () => {
    const bare = await score('\\boxed{174}<|im_end|>', new Map());
    expect(bare.out.components['toolcall/final_answer']).toBe(1);
    expect(bare.out.score).toBeCloseTo(0.3, 9);
    const unexecuted = await score(
      `${call}${response}<|im_start|>assistant\n\\boxed{174}<|im_end|>`,
      new Map(),
    );
    expect(unexecuted.out.score).toBeLessThan(1);
  });

  it('reads a completion cut by the token budget as `length`', async () => {
    const { file, out } = await score(`${call}${response}<|im_start|>assistant\n\\boxed{17`, executed);
    expect(file.finishReason).toBe('length');
    expect(out.components['toolcall/final_answer']).toBe(0);
  });

  it('sees a malformed call as a parse error (coherence), as toolrl does', async () => {
    const { out } = await score(
      '<tool_call>\n{"name": "calculator", "arguments": {"expression": </tool_call><|im_end|>',
      new Map(),
    );
    expect(out.components['toolcall/coherence']).toBeLessThan(1);
  });
});

describe("the time to TRL's final validation reward", () => {
  const side = (points: [number, number, number][]): SideResult => ({
    commandS: 100,
    rlS: points.at(-1)![2],
    steps: 64,
    stepS: 1,
    sampled: 4096,
    trained: 4096,
    responseTokens: 30,
    validation: points.map(([step, reward, atS]) => ({ step, accuracy: reward, reward, toolCalls: 1, atS })),
    rewardFirst: 0.5,
    rewardLast: 0.9,
  });
  const toolrl = side([
    [0, 0.55, 10],
    [16, 0.7, 60],
    [32, 0.86, 110],
    [48, 0.9, 160],
  ]);
  const trl = side([
    [0, 0.5, 12],
    [16, 0.8, 90],
    [32, 0.85, 170],
    [48, 0.85, 250],
  ]);

  it('is the first validation at or above the target, and undefined when none reaches it', () => {
    expect(secondsToReward(toolrl, 0.85)).toBe(110);
    expect(secondsToReward(trl, 0.85)).toBe(170); // its own final reward, first reached at v32
    expect(secondsToReward(toolrl, 0.95)).toBeUndefined();
  });

  it('is a row of the table with both times and their ratio', () => {
    const result: PeerResult = {
      command: 'npx tsx bench/peer-trl/index.ts --max-steps 48 --seed 0',
      date: '2026-11-25',
      cores: 2,
      cpu: 'cpu',
      load: 1,
      loadAfter: 1,
      steps: 48,
      toolrl,
      trl,
      versions: {},
      differences: [],
    };
    const row = renderMarkdown(result)
      .split('\n')
      .find((l) => l.includes("to TRL's final validation reward"));
    // toolrl's epoch can end in fewer steps (filter_groups drops groups): the header says so, and each side's
    // last validation is named
    const shorter = renderMarkdown({
      ...result,
      toolrl: { ...toolrl, steps: 56, validation: toolrl.validation.slice(0, 3) },
    });
    expect(shorter).toContain('| learner steps: toolrl 56, TRL 64 (--max-steps 48) |');
    expect(shorter).toContain(
      '| validation accuracy, v0 -> the last (toolrl v32, TRL v48) | 55.0% -> 86.0% |',
    );
    expect(row).toBe(
      "| RL stage wall-clock to TRL's final validation reward (0.850), first validation at or above it | 110.0 s (v32) | 170.0 s (v32) | 0.65x |",
    );
  });
});

describe('the warm start TRL continues from, and where --write puts the table', () => {
  it("is step-0's full model, or its LoRA adapter on the base the adapter names (a folder or a cached built-in)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'peer-trl-warm-'));
    try {
      const put = (path: string, value: unknown) => {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), JSON.stringify(value));
      };
      put('full/checkpoints/step-0/model/config.json', {});
      expect(warmStart(join(dir, 'full'), join(dir, 'cache'))).toEqual({
        model: join(dir, 'full/checkpoints/step-0/model'),
      });
      put('base/config.json', {});
      put('lora/checkpoints/step-0/adapter/adapter_config.json', {
        base_model_name_or_path: join(dir, 'base'),
      });
      expect(warmStart(join(dir, 'lora'), join(dir, 'cache'))).toEqual({
        model: join(dir, 'base'),
        adapter: join(dir, 'lora/checkpoints/step-0/adapter'),
      });
      // a built-in name (the real-model example's `smollm2-135m-instruct`): its folder in the model cache
      put('cache/smollm2-135m-instruct/config.json', {});
      put('named/checkpoints/step-0/adapter/adapter_config.json', {
        base_model_name_or_path: 'smollm2-135m-instruct',
      });
      expect(warmStart(join(dir, 'named'), join(dir, 'cache'))).toEqual({
        model: join(dir, 'cache/smollm2-135m-instruct'),
        adapter: join(dir, 'named/checkpoints/step-0/adapter'),
      });
      put('gone/checkpoints/step-0/adapter/adapter_config.json', {
        base_model_name_or_path: join(dir, 'nowhere'),
      });
      expect(() => warmStart(join(dir, 'gone'), join(dir, 'cache'))).toThrow(
        /base_model_name_or_path .*nowhere is neither a model folder nor a model in/,
      );
      mkdirSync(join(dir, 'none/checkpoints/step-0'), { recursive: true });
      expect(() => warmStart(join(dir, 'none'), join(dir, 'cache'))).toThrow(/no warm-start checkpoint/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("lists TRL's own record of where it autocast and what it trained", () => {
    expect(
      trlNotes({
        precision: {
          bf16: true,
          cpuBf16Unit: 'AVX512-BF16',
          autocast: { noGrad: ['bfloat16'], grad: ['bfloat16'] },
        },
        trainableParameters: 3686400,
        threads: 2,
      }),
    ).toEqual([
      "TRL's precision, measured in its run (GRPOConfig bf16=true; CPU bf16 unit: AVX512-BF16): forwards without gradients (generation) in bfloat16, training forwards in bfloat16",
      'TRL trains 3,686,400 parameters with 2 torch threads',
    ]);
    expect(trlNotes({})).toEqual([]);
  });

  it("keeps the quick start's block and gives another config or the asynchronous mode its own", () => {
    expect(blockKey('quickstart', true)).toBe('bench/peer-trl');
    expect(blockKey('smollm2', true)).toBe('bench/peer-trl:smollm2');
    expect(blockKey('smollm2', false)).toBe('bench/peer-trl:smollm2:async');
  });
});
