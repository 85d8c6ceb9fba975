// The tool-call stage cuts a long tool output to `max_tool_response_length` tokens of the run's own tokenizer
// (policy v0's), from a local folder store and from a remote one (which fetches only the tokenizer files).
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { onAssistantTurn, startEpisode } from '#shared/episode/episode';
import { putJson } from '#shared/pipeline/blob-json';
import { decodeMessage } from '#shared/pipeline/claim-check';
import { resolveRunConfig } from '#shared/pipeline/run-config';
import { RunResources } from '#shared/pipeline/run-resources';
import { handleToolCallRequest } from '#shared/pipeline/stages/tool-call';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import type { BlobStore } from '#shared/ports/blob-store';
import { silentLog } from '#shared/ports/log';
import { RunConfigSchema } from '#shared/schemas/config/run';
import { RolloutContinueSchema } from '#shared/schemas/messages/rollout-request';
import type { RunStatus } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';

const RUN = 'trunc-run';
const N = 64;
// 100 times a phrase of 19 characters, ~2k characters: words are few tokens each, so N tokens hold far more than
// N characters, which tells a token cut from a character cut.
const CODE = "print(' '.join(['the quick brown fox'] * 100))";
const FULL = `${Array(100).fill('the quick brown fox').join(' ')}\n`;

let bundleDir: string;
let tokenizer: ChatTokenizer;
beforeAll(async () => {
  bundleDir = (await tinyBundle()).bundleDir;
  tokenizer = await ChatTokenizer.load(bundleDir);
});

const roots: string[] = [];
const tempDir = (tag: string): string => {
  const dir = mkdtempSync(join(tmpdir(), `toolrl-${tag}-`));
  roots.push(dir);
  return dir;
};
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A folder store holding run.json (max_tool_response_length N, cut on the right) and the tiny bundle as v0. */
async function runStore(unit: 'tokens' | 'characters' = 'tokens'): Promise<FolderBlobStore> {
  const root = tempDir('trunc');
  const blobs = new FolderBlobStore(root);
  const config = resolveRunConfig(
    RunConfigSchema.parse({
      name: 'trunc',
      model: { path: 'tiny' },
      data: { train: 'train.parquet' },
      rollout: {
        n: 1,
        multi_turn: {
          max_tool_response_length: N,
          tool_response_truncate_side: 'left',
          tool_response_truncate_unit: unit,
        },
      },
      tools: { tools: [{ kind: 'code_interpreter' }] },
      reward: { functions: [{ name: 'format' }] },
    }),
    RUN,
  );
  const now = new Date().toISOString();
  const run: RunStatus = {
    schemaVersion: 1,
    runId: RUN,
    status: 'running',
    reason: null,
    createdAt: now,
    updatedAt: now,
    config,
    input: { config: keys.config(RUN), train: [], val: [] },
    totals: { groupsPlanned: 1, trainPrompts: 1, valPrompts: 0, epochs: 1 },
    learner: { submittedAt: null, jobId: null },
    completedAt: null,
  };
  await putJson(blobs, keys.runJson(RUN), run);
  const v0 = blobs.localPath(keys.policyVersion(RUN, 0));
  mkdirSync(v0, { recursive: true });
  for (const f of readdirSync(bundleDir)) copyFileSync(join(bundleDir, f), join(v0, f));
  return blobs;
}

/** The same store seen as a remote one (S3): no local paths, so files must be fetched. */
const asRemote = (store: FolderBlobStore): BlobStore =>
  new Proxy(store, {
    get(target, prop) {
      if (prop === 'localPath') return undefined;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as BlobStore;

/** Runs one code_interpreter call through the tool-call stage; returns the tool message sent back to rollout. */
async function callThroughStage(blobs: BlobStore, scratchDir: string): Promise<string> {
  mkdirSync(scratchDir, { recursive: true });
  const rollout = new EmbeddedQueue({ name: 'rollout', visibilityTimeoutSec: 30 });
  const resources = new RunResources(blobs, { scratchDir });
  const prompt = [{ role: 'user' as const, content: 'Say it 100 times.' }];
  const config = (await resources.config(RUN)).rollout.multi_turn;
  const { state: episode, decision } = onAssistantTurn(startEpisode(config, prompt), {
    text: `<tool_call>${JSON.stringify({ name: 'code_interpreter', arguments: { code: CODE } })}</tool_call>`,
    stop: 'tool_call',
    generatedTokens: 30,
  });
  expect(decision.kind).toBe('call_tools');
  try {
    await handleToolCallRequest(
      { blobs, queues: { rollout }, log: silentLog, now: () => new Date(), resources },
      {
        schemaVersion: 1,
        trajectory: {
          schemaVersion: 1,
          group: {
            runId: RUN,
            groupId: 'e0-p0',
            promptId: 'p0',
            epoch: 0,
            stage: null,
            split: 'train',
            dataSource: 'say',
            groupSize: 1,
            policyVersion: null,
          },
          sampleIndex: 0,
          row: { data_source: 'say', prompt },
          tokens: {
            schemaVersion: 1,
            sampleIndex: 0,
            seed: 0,
            tokenIds: [],
            promptLength: 0,
            lossMask: [],
            behaviorLogprobs: [],
            policyVersions: [],
            messages: prompt,
            tools: [],
            text: '',
            turns: [],
            prefixChecks: [],
            cacheKey: null,
          },
          episode,
        },
        calls: [{ name: 'code_interpreter', arguments: { code: CODE } }],
      },
      { receiveCount: 1 },
    );
  } finally {
    await resources.close();
  }
  const [sent] = rollout.browse();
  const next = RolloutContinueSchema.parse(await decodeMessage(blobs, sent!.body));
  const call = next.trajectory.episode.turns.at(-1)!.toolCalls[0]!;
  expect(call.result).toMatchObject({ ok: true, truncated: true });
  expect(next.toolMessages[0]!.content).toBe(call.result.output);
  return call.result.output;
}

describe('tool-call stage: max_tool_response_length in tokens of the run tokenizer (unit: tokens)', () => {
  it("cuts a long output to its first N tokens, with verl's marker (local folder store)", async () => {
    const blobs = await runStore();
    const output = await callThroughStage(blobs, tempDir('scratch'));
    // left side (verl): the head of the output, N tokens of it (the longest prefix that fits), then the marker.
    expect(output).toMatch(/^the quick brown fox the quick/);
    expect(output.endsWith('...(truncated)')).toBe(true);
    const head = output.slice(0, -'...(truncated)'.length);
    expect(tokenizer.encode(head).length).toBeLessThanOrEqual(N);
    expect(tokenizer.encode(head).length).toBeGreaterThanOrEqual(N - 1);
    expect(head.length).toBeGreaterThan(N); // a cut in characters would keep at most N
    expect(FULL.startsWith(head)).toBe(true);
  });

  it('fetches only the tokenizer files from a remote store into the scratch folder', async () => {
    const scratch = tempDir('scratch');
    const output = await callThroughStage(asRemote(await runStore()), scratch);
    expect(tokenizer.encode(output.slice(0, -'...(truncated)'.length)).length).toBeLessThanOrEqual(N);
    expect(output.endsWith('...(truncated)')).toBe(true);
    expect(readdirSync(join(scratch, RUN, 'tokenizer')).sort()).toEqual([
      '.complete',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
  });

  it('counts characters by default, as verl does, without fetching the tokenizer', async () => {
    const scratch = tempDir('scratch');
    const output = await callThroughStage(asRemote(await runStore('characters')), scratch);
    expect(output).toBe(`${FULL.slice(0, N)}...(truncated)`);
    expect(existsSync(join(scratch, RUN, 'tokenizer'))).toBe(false);
  });

  it('counts characters when the run has no policy yet', async () => {
    const blobs = await runStore();
    await blobs.delete(`${keys.policyVersion(RUN, 0)}tokenizer.json`);
    const resources = new RunResources(blobs, { scratchDir: tempDir('scratch') });
    expect(await resources.tokenCounter(RUN)).toBeUndefined();
  });
});
