// One agent episode as its endpoint sees it: each chat completions request is matched against the conversation the
// episode holds, the new messages are appended as the chat template's delta (token in, token out: the sampled ids
// are kept, never re-tokenised), one turn is sampled and the reply carries its parsed tool calls. A request that
// does not extend the conversation (the agent rewrote its history, or the template no longer extends the tokens)
// starts a new token sequence, a segment, and the reason is kept. The run's limits are enforced here: a request
// past `max_turns`, past `max_total_response_length` or past the episode's deadline gets an error and ends the
// episode with that finish reason. `finish` turns the episode into what the reward stage reads.
import { parseContext } from '#shared/episode/episode';
import { getParser } from '#shared/parsing/registry';
import { streamSeed } from '#shared/policy/rng';
import type { SamplingParams } from '#shared/policy/sampler';
import { responseLength, type TokenState, trajectoryTokens } from '#shared/policy/token-state';
import { PrefixBreakError, startState } from '#shared/policy/turns';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { AgentOutcome, EpisodeState } from '#shared/schemas/episode-state';
import type { ToolResult } from '#shared/schemas/tool-result';
import type { FinishReason, TurnRecord } from '#shared/schemas/trajectory';
import { canonicalJson } from '#shared/tools/canonical-json';
import type {
  AgentEnd,
  AgentEngine,
  AgentEpisodeOptions,
  CallDraft,
  FinishedEpisode,
  Segment,
  TurnDraft,
} from './types.ts';
import {
  ApiError,
  type ChatRequest,
  completion,
  contentText,
  messageKey,
  parseChatRequest,
  type ReplyMessage,
  type RequestMessage,
  templateMessage,
  toolSchemasOf,
} from './wire.ts';

export type { AgentEnd, AgentEngine, AgentEpisodeOptions, FinishedEpisode } from './types.ts';

export class AgentEpisode {
  private readonly segments: Segment[] = [];
  private readonly turns: TurnDraft[] = [];
  private conversation: ChatMessage[] = [];
  private requests = 0;
  private ended: { reason: FinishReason; message: string } | null = null;
  private finished = false;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly now: () => number;

  constructor(readonly opts: AgentEpisodeOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Serves one request body: the completion, or an ApiError. Requests are served one at a time, in order. */
  complete(body: unknown, engine: AgentEngine): Promise<Record<string, unknown>> {
    const run = this.queue.then(() => this.serve(body, engine));
    this.queue = run.catch(() => {});
    return run;
  }

  /** Why the episode ended at the endpoint, if it did. */
  get endedBy(): { reason: FinishReason; message: string } | null {
    return this.ended;
  }

  private end(reason: FinishReason, message: string, code: string): never {
    this.ended ??= { reason, message };
    throw new ApiError(400, message, code);
  }

  private get current(): Segment | undefined {
    return this.segments.at(-1);
  }

  /** Response tokens (generated + appended) of every segment: what `max_total_response_length` bounds. */
  private responseTokens(): number {
    return this.segments.reduce((n, s) => n + responseLength(s.tokens), 0);
  }

  private async serve(body: unknown, engine: AgentEngine): Promise<Record<string, unknown>> {
    this.requests++;
    if (this.finished || this.ended) {
      const why = this.ended ? `${this.ended.reason}: ${this.ended.message}` : 'the agent returned';
      throw new ApiError(400, `the episode has ended (${why}); no more requests are served`, 'episode_ended');
    }
    if (this.now() > this.opts.deadline)
      this.end(
        'timeout',
        'the episode ran past its wall-clock limit (rollout.agent.timeout)',
        'episode_timeout',
      );
    const req = parseChatRequest(body);
    const mt = this.opts.multiTurn;
    if (this.turns.length >= mt.max_turns)
      this.end(
        'max_turns',
        `the episode has had its max_turns=${mt.max_turns} completions; it ends here`,
        'max_turns_exceeded',
      );
    const parser = getParser(mt.tool_parser_format);
    // As the rollout stage renders a row: no schemas in the template for formats that list tools in their own
    // prompt text (ReAct) or keep calls inline (code blocks).
    const offered = toolSchemasOf(req.tools);
    const tools = parser.toolsInTemplate === false || parser.inline === true ? [] : offered;
    const keys = req.messages.map(messageKey);
    const params = this.params(req);

    let seg = this.current;
    let sampled: Awaited<ReturnType<AgentEngine['sample']>> | undefined;
    const why = seg ? this.divergence(seg, keys, canonicalJson(tools)) : null;
    if (seg && why === null) {
      const added = req.messages.slice(seg.view.length);
      this.recordResults(seg, added);
      const messages = added.map((m) => templateMessage(m, seg!.callNames));
      try {
        sampled = await engine.sample(seg.tokens, messages, params);
      } catch (err) {
        if (!(err instanceof PrefixBreakError)) throw err;
        seg.tokens = err.state;
        seg.endReason = err.message;
      }
    } else if (seg) {
      seg.endReason = why!;
    }
    if (!sampled) {
      seg = await this.startSegment(req, tools, engine);
      sampled = await engine.sample(seg.tokens, [], this.params(req));
    }
    seg = this.current!;
    seg.tokens = sampled.state;
    if (sampled.budgetExhausted)
      this.end(
        'max_total_response_length',
        `the new messages used up max_total_response_length=${mt.max_total_response_length} tokens; nothing was sampled`,
        'max_total_response_length_exceeded',
      );
    return this.reply(req, keys, seg, sampled, offered);
  }

  /** Why `keys`/`toolsKey` do not continue `seg`, or null when they extend what it holds. */
  private divergence(seg: Segment, keys: string[], toolsKey: string): string | null {
    if (toolsKey !== seg.toolsKey) return 'the agent changed the tools it offers';
    if (keys.length < seg.view.length)
      return `the agent sent ${keys.length} messages, fewer than the ${seg.view.length} of the conversation so far`;
    const at = seg.view.findIndex((k, i) => k !== keys[i]);
    if (at >= 0) return `the agent's message ${at} differs from the conversation the episode holds`;
    return null;
  }

  /** The run's sampling for this request: its own max_tokens may only lower the per-turn budget. */
  private params(req: ChatRequest): SamplingParams {
    const s = this.opts.sampling;
    const asked = req.max_completion_tokens ?? req.max_tokens ?? Number.POSITIVE_INFINITY;
    const before = this.segments.slice(0, -1).reduce((n, x) => n + responseLength(x.tokens), 0);
    return {
      ...s,
      maxNewTokens: Math.min(s.maxNewTokens, asked),
      // What the earlier segments used is spent for the whole episode.
      maxTotalResponseTokens: Math.max(1, this.opts.multiTurn.max_total_response_length - before),
    };
  }

  /** A new token sequence from the request's whole conversation, rendered as a prompt. */
  private async startSegment(req: ChatRequest, tools: ToolSchema[], engine: AgentEngine): Promise<Segment> {
    const k = this.segments.length;
    const mt = this.opts.multiTurn;
    if (this.responseTokens() >= mt.max_total_response_length)
      this.end(
        'max_total_response_length',
        `the episode has used its max_total_response_length=${mt.max_total_response_length} tokens`,
        'max_total_response_length_exceeded',
      );
    const messages = req.messages.map((m) => templateMessage(m, new Map()));
    const { text, ids } = await engine.prompt(messages, tools);
    // A later segment's prompt holds the episode so far: it may be as long as the prompt and the responses.
    const limit = this.opts.maxPromptLength + (k > 0 ? mt.max_total_response_length : 0);
    if (ids.length > limit) {
      const what = k > 0 ? 'data.max_prompt_length + max_total_response_length' : 'data.max_prompt_length';
      this.end(
        k > 0 ? 'max_total_response_length' : 'error',
        `the conversation is ${ids.length} tokens, over ${what}=${limit}`,
        'context_length_exceeded',
      );
    }
    // Each segment samples from its own random streams (segment 0 from the group's, as a rollout does).
    const seed =
      k === 0 ? this.opts.sampling.seed : streamSeed(this.opts.sampling.seed, this.opts.sampleIndex, -k);
    const segment: Segment = {
      tokens: startState({
        sampleIndex: this.opts.sampleIndex,
        seed,
        messages,
        tools,
        promptText: text,
        promptIds: ids,
      }),
      view: [],
      toolsKey: canonicalJson(tools),
      callNames: new Map(),
      turnStart: this.turns.length,
    };
    this.segments.push(segment);
    return segment;
  }

  /** Tool messages answering the last turn's calls become those calls' results (what the rewards read). */
  private recordResults(seg: Segment, added: RequestMessage[]): void {
    const last = this.turns.at(-1);
    if (!last || this.turns.length <= seg.turnStart) return;
    for (const m of added) {
      if (m.role !== 'tool') continue;
      const call = last.calls.find((c) => c.id === m.tool_call_id && c.result === null);
      if (call) call.result = { ok: true, output: contentText(m.content), error: null, truncated: false };
    }
  }

  private reply(
    req: ChatRequest,
    keys: string[],
    seg: Segment,
    sampled: Awaited<ReturnType<AgentEngine['sample']>>,
    offered: ToolSchema[],
  ): Record<string, unknown> {
    const { sample, version } = sampled;
    const mt = this.opts.multiTurn;
    const parsed = getParser(mt.tool_parser_format).parse(sample.text, parseContext(mt, offered));
    const index = this.turns.length;
    const span = seg.tokens.turns.at(-1)!;
    const useTools = req.tool_choice !== 'none';
    const calls: CallDraft[] = parsed.calls.map((c, i) => ({
      id: `call_${this.opts.id}_${index}_${i}`,
      name: c.name,
      arguments: c.arguments,
      // With tool_choice "none" the agent is not given the calls the model wrote: they are never run.
      result: useTools ? null : notRun('tool_choice was "none": the call was not given to the agent'),
    }));
    this.turns.push({
      record: {
        turn: index,
        policyVersion: version,
        text: sample.text,
        content: parsed.content,
        parseErrors: parsed.errors.map((e) => ({ message: e.message })),
        stop: sample.stop,
        tokenStart: span.tokenStart,
        tokenEnd: span.tokenEnd,
      },
      calls,
    });
    const given = useTools ? calls : [];
    // A malformed call comes back as the model wrote it, in the text (and counts as a parse error).
    const text = parsed.errors.length > 0 || !useTools ? sample.text : parsed.content;
    const message: ReplyMessage = {
      role: 'assistant',
      content: text === '' && given.length > 0 ? null : text,
      ...(given.length
        ? {
            tool_calls: given.map((c) => ({
              id: c.id,
              type: 'function' as const,
              function: { name: c.name, arguments: JSON.stringify(c.arguments) },
            })),
          }
        : {}),
      refusal: null,
    };
    for (const c of given) seg.callNames.set(c.id, c.name);
    seg.view = [...keys, messageKey(message)];
    this.conversation = [
      ...req.messages.map((m) => templateMessage(m, seg.callNames)),
      templateMessage(message, seg.callNames),
    ];
    if (this.responseTokens() >= mt.max_total_response_length)
      this.ended ??= {
        reason: 'max_total_response_length',
        message: `the episode used its max_total_response_length=${mt.max_total_response_length} tokens`,
      };
    return completion({
      id: `chatcmpl-${this.opts.id}-${index}`,
      model: this.opts.model,
      message,
      finishReason: given.length ? 'tool_calls' : sample.stop === 'length' ? 'length' : 'stop',
      promptTokens: span.tokenStart,
      completionTokens: sample.tokenIds.length,
      policyVersion: version,
    });
  }

  /**
   * Ends the episode once the request in flight (if any) is served: the trajectory the reward stage scores (the
   * last token sequence, every turn, why it ended) and the earlier segments. `fallback` gives the prompt's tokens
   * when the agent never sent a request.
   */
  async finish(how: AgentEnd, fallback: () => Promise<TokenState>): Promise<FinishedEpisode> {
    await this.queue;
    this.finished = true;
    const last = this.turns.at(-1);
    let reason: FinishReason;
    let error: string | null = null;
    if (this.ended) {
      reason = this.ended.reason;
      if (reason !== 'max_turns' && reason !== 'max_total_response_length') error = this.ended.message;
    } else if (how.kind === 'timeout') {
      reason = 'timeout';
      error = how.message;
    } else if (how.kind === 'error') {
      reason = 'error';
      error = how.message;
    } else if (!last) {
      reason = 'error';
      error = 'the agent returned without a chat completions request';
    } else reason = last.record.stop === 'length' ? 'length' : 'eos';
    const unanswered = notRun('no result: the agent did not send this call back before the episode ended');
    const turns: TurnRecord[] = this.turns.map((t) => ({
      ...t.record,
      toolCalls: t.calls.map((c) => ({
        name: c.name,
        arguments: c.arguments,
        result: c.result ?? unanswered,
        durationMs: 0,
      })),
    }));
    const seg = this.current;
    const tokens = seg ? seg.tokens : await fallback();
    const agent: AgentOutcome = {
      answer: how.kind === 'returned' ? how.answer : null,
      output: how.kind === 'returned' ? how.output : null,
      error: how.kind === 'returned' ? null : how.message,
      requests: this.requests,
      segments: Math.max(1, this.segments.length),
    };
    const episode: EpisodeState = {
      config: this.opts.multiTurn,
      phase: 'done',
      promptTokens: tokens.promptLength,
      responseTokens: this.responseTokens(),
      toolCallsUsed: turns.reduce((n, t) => n + t.toolCalls.filter((c) => c.result.ok).length, 0),
      messages: this.conversation.length ? this.conversation : tokens.messages,
      turns,
      pending: null,
      finishReason: reason,
      error,
      agent,
    };
    const segments = this.segments.slice(0, -1).map((s, k) => {
      const { sampleIndex: _i, messages: _m, ...arrays } = trajectoryTokens(s.tokens);
      return {
        ...arrays,
        turnStart: s.turnStart,
        turnEnd: this.segments[k + 1]!.turnStart,
        reason: s.endReason ?? 'the agent rewrote its history',
      };
    });
    return { tokens, episode, segments };
  }
}

const notRun = (message: string): ToolResult => ({
  ok: false,
  output: '',
  error: { type: 'internal_error', message },
  truncated: false,
});
