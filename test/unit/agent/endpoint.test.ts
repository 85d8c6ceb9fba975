// An agent episode's endpoint driven by the real `openai` Python client (the agent environment `npm run setup`
// makes), through the Python agent host, against the real tiny ONNX policy: messages and replies, tool calls and
// their results, errors in OpenAI's shape, the limits, a rewritten history, agents that throw or hang, and the
// tokens the trajectory keeps (exactly the ids the engine sampled, across turns).
//
// A random tiny model does not write tool calls, so the tool-call tests swap the model's draw for a scripted turn
// (`scripted` below): the text a trained model writes, tokenised and appended through the engine's own token
// bookkeeping (appendMessages / appendTurn), with the run's parser reading it. Everything else is the real engine.
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AgentEnd, type AgentEngine, AgentEpisode, type FinishedEpisode } from '#shared/agent/episode';
import { AgentFailure, type AgentRunner, loadAgent } from '#shared/agent/runner';
import { serveEpisode } from '#shared/agent/server';
import { loadPolicy, type Policy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING, type SamplingParams } from '#shared/policy/sampler';
import type { TokenState } from '#shared/policy/token-state';
import { appendMessages, appendTurn, startState } from '#shared/policy/turns';
import type { ChatMessage } from '#shared/schemas/chat';
import { AgentConfigSchema, MultiTurnConfigSchema } from '#shared/schemas/config/rollout';
import { REPO_ROOT, tinyBundle } from '../../../bench/support/tiny-model.ts';
import { HANG_MS } from '../../helpers/hang.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'agents');
const PROMPT: ChatMessage[] = [{ role: 'user', content: 'What is 347 plus 281?' }];

let policy: Policy;
const runners = new Map<string, AgentRunner>();
beforeAll(async () => {
  policy = await loadPolicy((await tinyBundle()).bundleDir, { threads: 1 });
});
afterAll(async () => {
  await Promise.all([...runners.values()].map((r) => r.close()));
  await policy?.dispose();
});

/** The agent function `name` of `file` (the fixtures' by default), loaded once; every load is its own Python host. */
async function agentNamed(name: string, file = join(FIXTURES, 'probe_agents.py')): Promise<AgentRunner> {
  const key = `${file}:${name}`;
  let r = runners.get(key);
  if (!r) {
    r = await loadAgent(AgentConfigSchema.parse({ path: basename(file), name }), file, dirname(file));
    runners.set(key, r);
  }
  return r;
}

interface Sampled {
  ids: number[];
  logprobs: number[];
}

/** The real engine on the tiny policy, keeping every turn it sampled. */
function realEngine(log: Sampled[] = []): AgentEngine {
  return {
    async prompt(messages, tools) {
      const text = policy.tokenizer.render(messages, tools, { addGenerationPrompt: true });
      return { text, ids: policy.tokenizer.encode(text) };
    },
    async sample(state, messages, s) {
      const c = await policy.continueTrajectory(state, messages, s);
      log.push({ ids: [...c.sample.tokenIds], logprobs: [...c.sample.logprobs] });
      return { ...c, version: policy.version };
    },
  };
}

/** The engine's token bookkeeping with the model's draw replaced by `turns` in order (see the file's comment). */
function scripted(turns: string[], log: Sampled[] = []): AgentEngine {
  const tok = policy.tokenizer;
  const eos = policy.manifest.eosTokenIds[0]!;
  let n = 0;
  return {
    prompt: realEngine().prompt,
    async sample(state: TokenState, messages: readonly ChatMessage[]) {
      const next = appendMessages(state, messages, tok, new Set(policy.manifest.eosTokenIds)).state;
      const text = turns[n++] ?? 'Done.';
      const ids = [...tok.encode(text), eos];
      const logprobs = ids.map((_, i) => -0.25 - i / 100);
      log.push({ ids, logprobs });
      const sample = { tokenIds: ids, logprobs, stop: 'eos' as const, text };
      return { state: appendTurn(next, sample, 3, tok), sample, budgetExhausted: false, version: 3 };
    },
  };
}

interface Run {
  how: AgentEnd;
  done: FinishedEpisode;
  out: Record<string, unknown>;
}

/** One episode: the endpoint up, the agent called with the row's prompt, the episode finished as the stage does. */
async function episode(
  agent: string,
  engine: AgentEngine,
  opts: {
    multiTurn?: Record<string, unknown>;
    timeoutS?: number;
    kwargs?: Record<string, unknown>;
    sampling?: Partial<SamplingParams>;
    /** The agent's file (the fixtures' probes by default). */
    file?: string;
  } = {},
): Promise<Run> {
  // Only the timeout tests bound an episode; the others get the suite's hang guard, however slow the machine.
  const timeoutS = opts.timeoutS ?? HANG_MS / 1000;
  // Loaded first (a host's start is seconds): the episode's clock starts when the agent is called, as in the stage.
  const runner = await agentNamed(agent, opts.file);
  const ep = new AgentEpisode({
    id: 'test',
    model: 'tiny',
    sampleIndex: 1,
    sampling: { ...DEFAULT_SAMPLING, maxNewTokens: 24, seed: 11, ...opts.sampling },
    multiTurn: MultiTurnConfigSchema.parse({
      max_turns: 6,
      max_total_response_length: 400,
      ...opts.multiTurn,
    }),
    maxPromptLength: 256,
    deadline: Date.now() + timeoutS * 1000,
  });
  const endpoint = await serveEpisode(ep, engine);
  let how: AgentEnd;
  try {
    const r = await runner.run(
      {
        base_url: endpoint.baseUrl,
        model: 'tiny',
        messages: PROMPT,
        tools: [],
        extra_info: {},
        sample_index: 1,
        episode_id: 'e0-p0/1/test',
        ...opts.kwargs,
      },
      timeoutS,
    );
    how = { kind: 'returned', ...r };
  } catch (err) {
    if (!(err instanceof AgentFailure)) throw err;
    how = { kind: err.kind, message: err.message };
  } finally {
    await endpoint.close();
  }
  const done = await ep.finish(how, async () => {
    const { text, ids } = await engine.prompt(PROMPT, []);
    return startState({
      sampleIndex: 1,
      seed: 11,
      messages: PROMPT,
      tools: [],
      promptText: text,
      promptIds: ids,
    });
  });
  const out = how.kind === 'returned' ? ((how.output as Record<string, unknown>) ?? {}) : {};
  return { how, done, out };
}

/** The token spans of a sequence whose loss mask is 1. */
function sampledSpans(t: { lossMask: (0 | 1)[]; tokenIds: number[] }): number[][] {
  const spans: number[][] = [];
  t.lossMask.forEach((m, i) => {
    if (m === 1 && (i === 0 || t.lossMask[i - 1] === 0)) spans.push([]);
    if (m === 1) spans.at(-1)!.push(t.tokenIds[i]!);
  });
  return spans;
}

describe('tool calls with the openai client', () => {
  it('replies with parsed tool_calls, records the results the agent sends back, and the final answer', async () => {
    const log: Sampled[] = [];
    const engine = scripted(
      [
        '<tool_call>\n{"name": "calculator", "arguments": {"expression": "347 + 281"}}\n</tool_call>',
        '\\boxed{628}',
      ],
      log,
    );
    const { how, done, out } = await episode('calculator_loop', engine);
    expect(how).toMatchObject({ kind: 'returned', answer: '\\boxed{628}' });
    const replies = out.replies as Record<string, unknown>[];
    expect(replies[0]).toMatchObject({
      content: null,
      finish_reason: 'tool_calls',
      tool_calls: [{ name: 'calculator', arguments: { expression: '347 + 281' } }],
      model: 'tiny',
      fingerprint: 'toolrl-v3',
    });
    expect(replies[1]).toMatchObject({ content: '\\boxed{628}', finish_reason: 'stop', tool_calls: [] });
    const e = done.episode;
    expect(e.finishReason).toBe('eos');
    expect(e.turns).toHaveLength(2);
    expect(e.turns[0]!.toolCalls).toEqual([
      {
        name: 'calculator',
        arguments: { expression: '347 + 281' },
        result: { ok: true, output: '628', error: null, truncated: false },
        durationMs: 0,
      },
    ]);
    expect(e.agent).toMatchObject({ answer: '\\boxed{628}', requests: 2, segments: 1, error: null });
    expect(done.segments).toEqual([]);
    // The tool result went in as the template's delta: rendered as a tool message, masked.
    const t = done.tokens;
    expect(sampledSpans(t)).toEqual(log.map((l) => l.ids));
    const between = t.tokenIds.slice(t.turns[0]!.tokenEnd, t.turns[1]!.tokenStart);
    expect(policy.tokenizer.decode(between)).toContain('628');
    expect(t.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
  });

  it('returns a malformed call as text and counts it as a parse error', async () => {
    const bad = '<tool_call>\n{"name": "calculator", "arguments": {"expression": </tool_call>';
    const { done, out } = await episode('calculator_loop', scripted([bad, 'I cannot.']));
    const replies = out.replies as Record<string, unknown>[];
    expect(replies[0]).toMatchObject({ content: bad, finish_reason: 'stop', tool_calls: [] });
    expect(done.episode.turns[0]!.parseErrors).toHaveLength(1);
    expect(done.episode.finishReason).toBe('eos');
  });
});

describe("the example's agents (examples/agent/agents)", () => {
  const EXAMPLE = join(REPO_ROOT, 'examples', 'agent', 'agents');
  const CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "347 + 281"}}\n</tool_call>';
  for (const [file, what] of [
    ['calculator_agent.py', 'the openai client'],
    ['sdk_agent.py', 'the OpenAI Agents SDK'],
  ] as const)
    it(`${what}: the call, its result and the answer in one token sequence, the answer returned`, async () => {
      const log: Sampled[] = [];
      const { how, done } = await episode('run', scripted([CALL, '\\boxed{628}'], log), {
        file: join(EXAMPLE, file),
      });
      expect(how).toMatchObject({ kind: 'returned', answer: '\\boxed{628}' });
      expect(done.segments).toEqual([]); // the agent sent its history back as the episode holds it
      expect(done.episode.finishReason).toBe('eos');
      expect(done.episode.turns.map((t) => t.toolCalls.map((c) => c.result.output))).toEqual([['628'], []]);
      expect(sampledSpans(done.tokens)).toEqual(log.map((l) => l.ids));
      expect(done.tokens.tools.map((t) => t.function)).toEqual([
        {
          name: 'calculator',
          description: 'Evaluate an arithmetic expression.',
          parameters: {
            type: 'object',
            properties: { expression: { type: 'string' } },
            required: ['expression'],
          },
        },
      ]);
    });
});

describe('token in, token out across turns (the real tiny policy)', () => {
  it('keeps exactly the sampled ids, log-probs and version; appends only the template delta of new messages', async () => {
    const log: Sampled[] = [];
    const { done, out } = await episode('chatty', realEngine(log), { kwargs: { rounds: 3 } });
    expect((out.replies as unknown[]).length).toBe(3);
    const t = done.tokens;
    expect(log).toHaveLength(3);
    expect(done.segments).toEqual([]);
    // Every sampled span is the engine's draw, id for id, with its log-probs and the version that sampled it.
    t.turns.forEach((turn, i) => {
      expect(t.tokenIds.slice(turn.tokenStart, turn.tokenEnd)).toEqual(log[i]!.ids);
      expect(t.behaviorLogprobs.slice(turn.tokenStart, turn.tokenEnd)).toEqual(log[i]!.logprobs);
      expect(t.policyVersions.slice(turn.tokenStart, turn.tokenEnd)).toEqual(
        log[i]!.ids.map(() => policy.version),
      );
      expect(t.lossMask.slice(turn.tokenStart, turn.tokenEnd).every((m) => m === 1)).toBe(true);
    });
    expect(t.lossMask.reduce((a: number, m) => a + m, 0)).toBe(log.reduce((a, l) => a + l.ids.length, 0));
    // Between turns: the user message as the template renders it after the held text, tokenised alone.
    const tok = policy.tokenizer;
    for (let i = 1; i < t.turns.length; i++) {
      const delta = t.tokenIds.slice(t.turns[i - 1]!.tokenEnd, t.turns[i]!.tokenStart);
      expect(tok.decode(delta)).toContain(`Go on (${i - 1}).`);
      expect(
        t.policyVersions.slice(t.turns[i - 1]!.tokenEnd, t.turns[i]!.tokenStart).every((v) => v === -1),
      ).toBe(true);
    }
    // The replies the agent read are the sampled text (outside any call, trimmed); prefix checks all held.
    expect(t.turns.map((x) => x.text)).toEqual(
      log.map((l, i) => tok.decode(t.turns[i]!.stop === 'eos' ? l.ids.slice(0, -1) : l.ids)),
    );
    expect((out.replies as { content: string }[]).map((r) => r.content)).toEqual(
      t.turns.map((x) => x.text.trim()),
    );
    expect(t.prefixChecks.every((c) => c.ok)).toBe(true);
  });
});

describe('a rewritten history', () => {
  it('splits the episode: the first token sequence is kept as a segment and says why', async () => {
    const log: Sampled[] = [];
    const { done } = await episode('rewriter', realEngine(log));
    expect(done.segments).toHaveLength(1);
    const [first] = done.segments;
    expect(first!.reason).toMatch(/message 0 differs|fewer/);
    expect(first!.turnStart).toBe(0);
    expect(first!.turnEnd).toBe(1);
    expect(sampledSpans(first!)).toEqual([log[0]!.ids]);
    // The second request started a new sequence and the third extended it.
    expect(sampledSpans(done.tokens)).toEqual([log[1]!.ids, log[2]!.ids]);
    expect(done.episode.turns).toHaveLength(3);
    expect(done.episode.agent).toMatchObject({ segments: 2, requests: 3 });
    expect(done.tokens.seed).not.toBe(11);
  });
});

describe('errors in OpenAI shape', () => {
  it('refuses what the endpoint cannot do, naming the parameter, and goes on serving', async () => {
    const { out, done } = await episode('bad_requests', realEngine());
    expect(out.stream).toMatchObject({
      status: 400,
      code: 'unsupported_parameter',
      param: 'stream',
      type: 'invalid_request_error',
    });
    expect(out.n).toMatchObject({ status: 400, code: 'unsupported_parameter', param: 'n' });
    expect(out.tool_choice).toMatchObject({ status: 400, param: 'tool_choice' });
    expect(out.stop).toMatchObject({ status: 400, param: 'stop' });
    expect(out.no_messages).toMatchObject({ status: 400, code: 'invalid_request', param: 'messages' });
    expect(out.tool_without_id).toMatchObject({ status: 400, param: 'messages.1' });
    expect(out.after).toMatchObject({ finish_reason: expect.stringMatching(/stop|length/) });
    expect(done.episode.turns).toHaveLength(1);
    expect(done.episode.agent!.requests).toBe(7);
  });
});

describe('limits', () => {
  it('max_turns: the request after the last allowed turn is refused and the episode ends with max_turns', async () => {
    const { out, done } = await episode('until_refused', realEngine(), { multiTurn: { max_turns: 2 } });
    expect(out).toMatchObject({ served: 2, code: 'max_turns_exceeded', again: 'episode_ended' });
    expect(done.episode.finishReason).toBe('max_turns');
    expect(done.episode.turns).toHaveLength(2);
  });

  it('max_total_response_length: the episode ends when generated and appended tokens reach it', async () => {
    const { out, done } = await episode('until_refused', realEngine(), {
      multiTurn: { max_total_response_length: 40 },
      sampling: { maxNewTokens: 16 },
    });
    expect(out.code).toMatch(/max_total_response_length_exceeded|episode_ended/);
    expect(done.episode.finishReason).toBe('max_total_response_length');
    expect(done.tokens.tokenIds.length - done.tokens.promptLength).toBeLessThanOrEqual(40);
  });
});

describe('agents that fail', () => {
  it('an agent that throws ends its episode with error and the reason, its turns kept', async () => {
    const { how, done } = await episode('raises', realEngine());
    expect(how.kind).toBe('error');
    expect(done.episode.finishReason).toBe('error');
    expect(done.episode.error).toMatch(/ValueError: the agent's own bug/);
    expect(done.episode.agent!.error).toMatch(/ValueError/);
    expect(done.episode.turns).toHaveLength(1);
  });

  it('an agent that never returns is cancelled at the timeout and its episode ends with timeout', async () => {
    const log: Sampled[] = [];
    const { how, done } = await episode('hangs', realEngine(log), { timeoutS: 8 });
    expect(how, JSON.stringify(how)).toMatchObject({
      kind: 'timeout',
      message: expect.stringMatching(/within 8s/),
    });
    expect(done.episode.finishReason).toBe('timeout');
    // Whatever it got before (its one turn, unless the machine was too slow to serve it in time) is kept.
    expect(done.episode.turns).toHaveLength(log.length);
    expect(sampledSpans(done.tokens)).toEqual(log.map((l) => l.ids));
  });
  it('an agent that blocks its host past the timeout ends its episode with timeout (the host is restarted)', async () => {
    const { how, done } = await episode('blocks', realEngine(), { timeoutS: 1 });
    expect(how, JSON.stringify(how)).toMatchObject({
      kind: 'timeout',
      message: expect.stringMatching(/within 1s.*restarted/),
    });
    expect(done.episode.finishReason).toBe('timeout');
  });
});

describe('a TypeScript agent', () => {
  const FILE = join(FIXTURES, 'fetch_agent.ts');
  it('is called in-process with the same arguments; its object return carries the answer', async () => {
    const log: Sampled[] = [];
    const { how, done } = await episode('run', realEngine(log), { file: FILE });
    expect(how).toMatchObject({ kind: 'returned', output: { status: 200 } });
    expect(how.kind === 'returned' && how.answer).toBe(done.episode.turns[0]!.content);
    expect(sampledSpans(done.tokens)).toEqual([log[0]!.ids]);
  });

  it('is aborted at the timeout and its episode ends with timeout', async () => {
    const { how, done } = await episode('waits', realEngine(), { file: FILE, timeoutS: 1 });
    expect(how).toMatchObject({ kind: 'timeout', message: expect.stringMatching(/within 1s/) });
    expect(done.episode.finishReason).toBe('timeout');
    expect(done.tokens.lossMask.every((m) => m === 0)).toBe(true); // the prompt alone: nothing was sampled
  });
});

describe('clients as agents build them', () => {
  it('an AsyncOpenAI built from the environment alone lists the model', async () => {
    const { out } = await episode('env_key', realEngine());
    expect(out).toEqual({ models: ['tiny'] });
  });

  it('a plain (synchronous) function with the sync client; its text return is the answer', async () => {
    const { how, done } = await episode('plain_function', realEngine());
    expect(how.kind).toBe('returned');
    expect(how.kind === 'returned' && how.answer).toBe(
      done.episode.turns[0]!.content || done.episode.turns[0]!.text,
    );
  });

  it('a function that takes no base_url is refused when it is loaded', async () => {
    await expect(
      loadAgent(
        AgentConfigSchema.parse({ path: 'probe_agents.py', name: 'no_base_url' }),
        join(FIXTURES, 'probe_agents.py'),
        FIXTURES,
      ),
    ).rejects.toThrow(/no `base_url` keyword/);
    await expect(
      loadAgent(
        AgentConfigSchema.parse({ path: 'probe_agents.py', name: 'missing' }),
        join(FIXTURES, 'probe_agents.py'),
        FIXTURES,
      ),
    ).rejects.toThrow(/defines no 'missing'/);
  });
});
