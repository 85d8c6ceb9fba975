// What bench/peer-trl reads back from a finished `toolrl train` run folder: validation summaries, step rows, and
// one sampled prompt's tokens (so the TRL side can prove it feeds the model the same prompt).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunConfig } from '#shared/schemas/config/run';
import { readEvalSummaries, readStepRows } from '../run-folder.ts';
import type { SideResult, ValidationPoint } from './report.ts';

function readEvals(runDir: string): (ValidationPoint & { at: number })[] {
  return readEvalSummaries(runDir).map((s) => ({
    step: s.policyVersion,
    accuracy: s.accuracy,
    reward: s.rewardMean,
    toolCalls: s.toolCallsPerTrajectory,
    at: s.at,
  }));
}

/**
 * When the learner published v0 (warm start done, the RL stage begins): pipeline.log's `learner ready` line. The v0
 * validation runs beside the first steps, so its own timestamp would start the clock late.
 */
function learnerReadyAt(runDir: string): number {
  for (const line of readFileSync(join(runDir, 'pipeline.log'), 'utf8').split('\n')) {
    if (!line.includes('"learner ready"')) continue;
    const rec = JSON.parse(line) as { time: string; message: string };
    if (rec.message === 'learner ready') return Date.parse(rec.time);
  }
  throw new Error(`${runDir}/pipeline.log: no "learner ready" line`);
}

/**
 * The RL stage: from the learner publishing v0 to the last validation written, every validation included (v0's
 * runs beside the first steps here, before them in TRL). The command's wall-clock (warm start included) is beside it.
 */
export function readToolrlRun(runDir: string, startMs: number, endMs: number, config: RunConfig): SideResult {
  const evals = readEvals(runDir);
  const rows = readStepRows(runDir);
  const first = evals[0];
  const last = evals.at(-1);
  if (!first || !last || first === last) throw new Error(`${runDir}: fewer than two validations`);
  const ready = learnerReadyAt(runDir);
  const rlS = (last.at - ready) / 1000;
  const sampled = rows.reduce(
    (a, r) => a + ((r.groups ?? 0) + (r.dropped_groups ?? 0)) * config.rollout.n,
    0,
  );
  const trained = rows.reduce((a, r) => a + (r.trajectories ?? 0), 0);
  const stepS = rows.map((r) => r.step_time_s ?? Number.NaN);
  return {
    commandS: (endMs - startMs) / 1000,
    rlS,
    steps: rows.length,
    stepS: stepS.reduce((a, b) => a + b, 0) / stepS.length,
    sampled,
    trained,
    responseTokens: rows.reduce((a, r) => a + (r.response_length_mean ?? 0), 0) / rows.length,
    validation: evals.map(({ at, ...v }) => ({ ...v, atS: (at - ready) / 1000 })),
    rewardFirst: rows[0]?.reward_mean,
    rewardLast: rows.at(-1)?.reward_mean,
  };
}

/** The prompt (last user message) and the prompt tokens of one trajectory toolrl sampled. */
export function findPromptCheck(runDir: string): { content: string; tokenIds: number[] } | undefined {
  const root = join(runDir, 'trajectories');
  for (const group of readdirSync(root).sort()) {
    for (const f of readdirSync(join(root, group)).sort()) {
      const t = JSON.parse(readFileSync(join(root, group, f), 'utf8'));
      const user = (t.messages as { role: string; content: string }[] | undefined)?.find(
        (m) => m.role === 'user',
      );
      if (user && Array.isArray(t.tokenIds) && typeof t.promptLength === 'number')
        return { content: user.content, tokenIds: t.tokenIds.slice(0, t.promptLength) };
    }
  }
  return undefined;
}

/**
 * The weights right after the warm start: a full model (checkpoints/step-0/model) or, with model.lora, the adapter
 * (checkpoints/step-0/adapter) on the base model its adapter_config.json names: a folder, or a built-in name
 * (`smollm2-135m-instruct`) whose converted folder is in the model cache (`modelCache`: $TOOLRL_MODEL_CACHE, else
 * .cache/models, as the learner's model store has it).
 */
export function warmStart(runDir: string, modelCache: string): { model: string; adapter?: string } {
  const step0 = join(runDir, 'checkpoints', 'step-0');
  const model = join(step0, 'model');
  if (existsSync(join(model, 'config.json'))) return { model };
  const adapter = join(step0, 'adapter');
  if (existsSync(join(adapter, 'adapter_config.json'))) {
    const base = JSON.parse(readFileSync(join(adapter, 'adapter_config.json'), 'utf8'))
      .base_model_name_or_path as string | undefined;
    const found = [base, base && join(modelCache, base)].find(
      (d): d is string => !!d && existsSync(join(d, 'config.json')),
    );
    if (!found)
      throw new Error(
        `${adapter}/adapter_config.json: base_model_name_or_path ${base} is neither a model folder nor a model in ${modelCache}`,
      );
    return { model: found, adapter };
  }
  throw new Error(
    `${step0}: no warm-start checkpoint, model/ or adapter/ (did the config run an SFT warm start?)`,
  );
}

/**
 * sha256 of the warm start's weights (the adapter's safetensors, or the model's): what a reused TRL side
 * (--trl-result) must have started from.
 */
export function warmStartSha256(warm: { model: string; adapter?: string }): string {
  const dir = warm.adapter ?? warm.model;
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.safetensors'))
    .sort();
  if (files.length === 0) throw new Error(`${dir}: no .safetensors weights`);
  const h = createHash('sha256');
  for (const f of files) h.update(readFileSync(join(dir, f)));
  return h.digest('hex');
}

/**
 * The wall-clock of a finished run's command, from its pipeline.log: the first record to the last (the `toolrl
 * train` process itself is not timed when an earlier run folder is reused with --toolrl-run).
 */
export function pipelineSpanMs(runDir: string): { start: number; end: number } {
  const times = readFileSync(join(runDir, 'pipeline.log'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => Date.parse((JSON.parse(l) as { time: string }).time))
    .filter((t) => Number.isFinite(t));
  if (times.length === 0) throw new Error(`${runDir}/pipeline.log: no timed records`);
  return { start: Math.min(...times), end: Math.max(...times) };
}
