// `model.chat_template`: a chat template that replaces the model's own (by name, a .jinja file, or the text
// itself), and the check that a run's template shows the model what tool use needs: a template that drops the tool
// schemas or the tool results (TinyLlama-1.1B-Chat's, and many chat models') would train a model that never sees
// its tools. The template is resolved to its text when the run config is read, so run.json, the rollouts and the
// learner all use the same one.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';

const TEMPLATES_DIR =
  process.env.TOOLRL_CHAT_TEMPLATES_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'templates');

/**
 * Built-in templates by name. `chatml`: Qwen2.5's ChatML with tools (schemas in the system turn, Hermes
 * `<tool_call>` calls, results in `<tool_response>`), append-only so rollouts can add each turn's delta; the tiny
 * test model's own template. `smollm2`: the same tool format for SmolLM2-Instruct, whose own template has no tools,
 * with SmolLM2's default system prompt (a conversation without tools renders as SmolLM2's own template does).
 */
export const NAMED_CHAT_TEMPLATES = ['chatml', 'smollm2'] as const;

const isJinja = (s: string): boolean => s.includes('{%') || s.includes('{{');
const looksLikeFile = (s: string): boolean => /\.(jinja2?|j2|txt)$/i.test(s) || s.includes('/');

export class ChatTemplateError extends Error {
  override name = 'ChatTemplateError';
}

/**
 * The template text `value` stands for: a built-in name, a file (relative to `baseDir`; only where the config
 * file is at hand), or Jinja text as it is.
 */
export function resolveChatTemplate(value: string, baseDir?: string): string {
  if (isJinja(value)) return value;
  if ((NAMED_CHAT_TEMPLATES as readonly string[]).includes(value))
    return readFileSync(join(TEMPLATES_DIR, `${value}.jinja`), 'utf8');
  if (looksLikeFile(value)) {
    if (baseDir === undefined)
      throw new ChatTemplateError(
        `model.chat_template ${value} names a file, which only toolrl train and toolrl submit can read (they put its text in the uploaded config)`,
      );
    const path = isAbsolute(value) ? value : resolve(baseDir, value);
    if (!existsSync(path))
      throw new ChatTemplateError(`model.chat_template ${value}: no such file (${path})`);
    return readFileSync(path, 'utf8');
  }
  throw new ChatTemplateError(
    `model.chat_template ${JSON.stringify(value)} is neither a built-in template (${NAMED_CHAT_TEMPLATES.join(', ')}), a .jinja file nor Jinja text`,
  );
}

/** What renders a conversation: ChatTokenizer, or any stand-in with its `render`. */
export interface Renderer {
  render(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
    opts: { addGenerationPrompt: boolean },
  ): string;
}

const PROBE_TOOL: ToolSchema = {
  type: 'function',
  function: {
    name: 'toolrl_probe_lookup',
    description: 'Looks up the probe value.',
    parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
  },
};
const PROBE_RESULT = 'toolrl-probe-result-7391';

/**
 * What the template loses of a tool-using conversation: [] when it renders the tool schemas and the tool result;
 * otherwise one phrase per loss ("the tool schemas", "the tool results", or the error it raises).
 */
export function chatTemplateProblems(tok: Renderer): string[] {
  const messages: ChatMessage[] = [
    { role: 'user', content: 'What is the probe value?' },
    {
      role: 'assistant',
      content: '',
      tool_calls: [
        { type: 'function', function: { name: PROBE_TOOL.function.name, arguments: { key: 'a' } } },
      ],
    },
    { role: 'tool', name: PROBE_TOOL.function.name, content: PROBE_RESULT },
  ];
  let text: string;
  try {
    text = tok.render(messages, [PROBE_TOOL], { addGenerationPrompt: true });
  } catch (err) {
    return [`a conversation with tools (it raises: ${(err as Error).message.split('\n')[0]})`];
  }
  const problems: string[] = [];
  if (!text.includes(PROBE_TOOL.function.name)) problems.push('the tool schemas');
  if (!text.includes(PROBE_RESULT)) problems.push('the tool results');
  return problems;
}

/** The reason a run with this model and template is refused, or null when the template shows tools and results. */
export function chatTemplateRefusal(modelPath: string, tok: Renderer, overridden: boolean): string | null {
  const problems = chatTemplateProblems(tok);
  if (problems.length === 0) return null;
  const whose = overridden ? 'the chat template of model.chat_template' : `the chat template of ${modelPath}`;
  return `${whose} drops ${problems.join(' and ')}: the model would never see its tools or what they return. Set model.chat_template to a template that renders tools (a built-in: ${NAMED_CHAT_TEMPLATES.map((n) => `\`${n}\``).join(', ')}; or a .jinja file), e.g. \`npx toolrl train CONFIG model.chat_template=chatml\``;
}
