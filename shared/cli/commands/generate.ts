// `toolrl generate`: sample G completions of one prompt from a rollout bundle with the rollout engine itself
// (shared prefill, batched decode, seedable), printing token ids and log-probs for parity checks and debugging. A
// checkpoint or model folder is exported to a bundle first; inside a run folder, the run's model.chat_template
// renders the prompt, as the run's rollouts rendered it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { z } from 'zod';
import { UsageError } from '../errors.ts';
import { printJson, readStructuredFile } from '../io.ts';

interface GenerateFlags {
  policy: string;
  prompt?: string;
  messages?: string;
  tools?: string;
  n: string;
  maxNewTokens: string;
  temperature: string;
  topP: string;
  topK: string;
  seed: string;
  stopOnToolCall: boolean;
  threads?: string;
  chatTemplate?: string;
  json?: boolean;
}

function number(flag: string, raw: string, integer: boolean): number {
  const v = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(v) || (integer && !Number.isInteger(v)))
    throw new UsageError(
      `--${flag} must be ${integer ? 'an integer' : 'a number'}, got ${JSON.stringify(raw)}`,
    );
  return v;
}

export function register(program: Command): void {
  program
    .command('generate')
    .description('Sample G completions of a prompt from a rollout bundle (the rollout engine, seedable)')
    .requiredOption(
      '--policy <dir>',
      'rollout bundle folder (manifest.json, model.onnx, tokenizer), or a checkpoint / model folder (exported first)',
    )
    .option('--prompt <text>', 'a single user message')
    .option('--messages <file>', 'JSON/YAML chat messages ([{role, content}, ...] or {messages: [...]})')
    .option(
      '--tools <file>',
      'JSON/YAML OpenAI tool schemas ([{type: "function", function: {...}}] or {tools: [...]})',
    )
    .option('--n <G>', 'samples of the prompt (one shared prefill, batched decode)', '1')
    .option('--max-new-tokens <N>', 'token budget per sample', '64')
    .option('--temperature <T>', 'softmax temperature; 0 is greedy', '1')
    .option('--top-p <P>', 'nucleus mass in (0, 1]', '1')
    .option('--top-k <K>', 'keep the K most likely tokens; 0 disables', '0')
    .option('--seed <S>', 'seed: sample i draws from the stream (S, i, 0)', '0')
    .option('--no-stop-on-tool-call', 'do not stop a sample at </tool_call>')
    .option('--threads <N>', 'onnxruntime intra-op threads (default: all cores)')
    .option(
      '--chat-template <name|file>',
      "chat template instead of the bundle's (a built-in name, a .jinja file); default: the run's model.chat_template when the policy is in a run folder",
    )
    .option(
      '--json',
      'print {"prompt_token_ids", "samples": [{"text", "token_ids", "logprobs", "finish_reason"}]}',
    )
    .action(async (flags: GenerateFlags) => {
      if ((flags.prompt === undefined) === (flags.messages === undefined))
        throw new UsageError('give exactly one of --prompt TEXT or --messages FILE');
      const { ChatMessageSchema, ToolSchemaSchema } = await import('#shared/schemas/chat');
      const { z: zod } = await import('zod');
      const parseList = <S extends z.ZodType>(file: string, key: string, item: S): z.infer<S>[] => {
        const raw = readStructuredFile(file);
        const list = Array.isArray(raw) ? raw : (raw as Record<string, unknown> | null)?.[key];
        const r = zod.array(item).safeParse(list);
        if (!r.success) {
          const issue = r.error.issues[0]!;
          throw new UsageError(`${file}: ${key}[${issue.path.join('.')}] ${issue.message}`);
        }
        return r.data;
      };
      const messages =
        flags.prompt !== undefined
          ? [{ role: 'user' as const, content: flags.prompt }]
          : parseList(flags.messages!, 'messages', ChatMessageSchema);
      const tools = flags.tools ? parseList(flags.tools, 'tools', ToolSchemaSchema) : [];
      const n = number('n', flags.n, true);
      const params = {
        temperature: number('temperature', flags.temperature, false),
        topP: number('top-p', flags.topP, false),
        topK: number('top-k', flags.topK, true),
        maxNewTokens: number('max-new-tokens', flags.maxNewTokens, true),
        seed: number('seed', flags.seed, true),
        stopOnToolCallEnd: flags.stopOnToolCall,
      };
      const threads = flags.threads !== undefined ? number('threads', flags.threads, true) : undefined;
      const { checkSamplingParams } = await import('#shared/policy/sampler');
      try {
        checkSamplingParams(params);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      if (n < 1) throw new UsageError(`--n must be >= 1, got ${n}`);

      const { BundleError } = await import('#shared/policy/bundle');
      const { loadPolicy } = await import('#shared/policy/policy');
      const { asBundle, runConfigBeside } = await import('#shared/runtime/evaluate');
      const { resolveChatTemplate, ChatTemplateError } = await import('#shared/policy/chat-templates');
      let chatTemplate: string | undefined;
      // A checkpoint in a run folder is exported as the run's learner exported its bundles (asBundle).
      const runModel = runConfigBeside(flags.policy)?.config.model;
      try {
        chatTemplate =
          flags.chatTemplate !== undefined
            ? resolveChatTemplate(flags.chatTemplate, process.cwd())
            : runModel?.chat_template;
      } catch (err) {
        if (err instanceof ChatTemplateError) throw new UsageError(err.message);
        throw err;
      }
      const scratch = mkdtempSync(join(tmpdir(), 'toolrl-generate-'));
      let policy: Awaited<ReturnType<typeof loadPolicy>>;
      try {
        const dir = await asBundle(resolve(flags.policy), scratch, undefined, runModel);
        policy = await loadPolicy(dir, {
          ...(threads !== undefined ? { threads } : {}),
          ...(chatTemplate !== undefined ? { chatTemplate } : {}),
        });
      } catch (err) {
        rmSync(scratch, { recursive: true, force: true });
        if (err instanceof BundleError) throw new UsageError(err.message);
        throw err;
      }
      try {
        const promptIds = policy.renderPrompt(messages, tools);
        const t0 = performance.now();
        const samples = await policy.sampleGroup(promptIds, n, params);
        const seconds = (performance.now() - t0) / 1000;
        if (flags.json) {
          printJson({
            prompt_token_ids: promptIds,
            samples: samples.map((s) => ({
              text: s.text,
              token_ids: s.tokenIds,
              logprobs: s.logprobs,
              finish_reason: s.stop,
            })),
          });
          return;
        }
        const m = policy.metrics;
        const out = process.stdout;
        out.write(`prompt: ${promptIds.length} tokens; policy v${policy.version}\n`);
        samples.forEach((s, i) => {
          const mean = s.logprobs.reduce((a, b) => a + b, 0) / Math.max(1, s.logprobs.length);
          out.write(
            `\n--- sample ${i} (${s.tokenIds.length} tokens, ${s.stop}, mean log-prob ${mean.toFixed(3)})\n${s.text}\n`,
          );
        });
        const tps = (tokens: number, ms: number) => (ms > 0 ? ((1000 * tokens) / ms).toFixed(1) : '-');
        out.write(
          `\n${seconds.toFixed(2)} s: prefill ${m.prefillTokens} tokens (${tps(m.prefillTokens, m.prefillMs)} tok/s), ` +
            `decode ${m.decodeTokens} tokens in ${m.decodeSteps} steps (${tps(m.decodeTokens, m.decodeMs)} tok/s)\n`,
        );
      } finally {
        await policy.dispose();
        rmSync(scratch, { recursive: true, force: true });
      }
    });
}
