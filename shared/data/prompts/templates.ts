// Prompt templates chosen by `prompt_type`: YAML files (the built-ins sit next to this module) with an
// optional system prompt and a user-message pattern that wraps the row's question. A `prompt_type` that
// looks like a path loads the user's own copy instead.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { ChatMessage } from '#shared/schemas/chat';
import type { DatasetRow } from '#shared/schemas/dataset-row';

/** Where the built-in templates live; bundles that cannot ship this folder next to the code set TOOLRL_PROMPTS_DIR. */
export const BUILTIN_PROMPTS_DIR = process.env.TOOLRL_PROMPTS_DIR ?? dirname(fileURLToPath(import.meta.url));

const PLACEHOLDERS = new Set(['question', 'tools', 'tool_names']);
const PLACEHOLDER = /\{\{\s*([a-z_]+)\s*\}\}/g;

export const PromptTemplateSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().default(''),
    /** Other names it answers to (other systems' names for the built-ins are translated by shared/config). */
    aliases: z.array(z.string()).default([]),
    /** Replaces the row's leading system message, or is put first when the row has none. */
    system: z.string().optional(),
    /** The new text of the row's last user message. */
    user: z.string().default('{{question}}'),
  })
  .strict();
export type PromptTemplate = z.infer<typeof PromptTemplateSchema>;

const cache = new Map<string, PromptTemplate>();

function parseTemplateFile(path: string): PromptTemplate {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`prompt template ${path}: ${(err as Error).message}`);
  }
  const parsed = PromptTemplateSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '<root>'}: ${i.message}`);
    throw new Error(`prompt template ${path}: ${issues.join('; ')}`);
  }
  for (const text of [parsed.data.system ?? '', parsed.data.user]) {
    for (const [, name] of text.matchAll(PLACEHOLDER)) {
      if (!PLACEHOLDERS.has(name!)) {
        throw new Error(
          `prompt template ${path}: unknown placeholder {{${name}}}; known: ${[...PLACEHOLDERS].map((p) => `{{${p}}}`).join(', ')}`,
        );
      }
    }
  }
  return parsed.data;
}

/** The built-in templates, by name. */
export function listPromptTemplates(): { template: PromptTemplate; path: string }[] {
  return readdirSync(BUILTIN_PROMPTS_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({
      path: join(BUILTIN_PROMPTS_DIR, f),
      template: parseTemplateFile(join(BUILTIN_PROMPTS_DIR, f)),
    }));
}

/** A `prompt_type` that names a file (ends in .yaml/.yml or has a path separator) rather than a built-in. */
export const looksLikePath = (s: string): boolean =>
  /\.ya?ml$/.test(s) || s.includes('/') || s.includes('\\');

/**
 * Loads a template by built-in name or one of its `aliases`, or from a YAML file path
 * (relative to `baseDir`, e.g. the run config's folder).
 */
export function loadPromptTemplate(promptType: string, baseDir = process.cwd()): PromptTemplate {
  let path: string;
  if (looksLikePath(promptType)) {
    path = isAbsolute(promptType) ? promptType : resolve(baseDir, promptType);
    if (!existsSync(path)) throw new Error(`prompt template file ${path} does not exist`);
  } else {
    const name = promptType;
    const found = listPromptTemplates().find(
      ({ template }) => template.name === name || template.aliases.includes(name),
    );
    if (!found) {
      const names = listPromptTemplates().map(({ template }) => template.name);
      throw new Error(
        `unknown prompt_type ${promptType}; built-in: ${names.join(', ')} (or a path to a .yaml template)`,
      );
    }
    path = found.path;
  }
  const cached = cache.get(path);
  if (cached) return cached;
  const template = parseTemplateFile(path);
  cache.set(path, template);
  return template;
}

function render(text: string, vars: Record<string, string>): string {
  return text.replace(PLACEHOLDER, (_, name: string) => vars[name] ?? '');
}

/** Applies an already loaded template (see applyPromptTemplate). */
export function applyTemplate(row: DatasetRow, template: PromptTemplate): DatasetRow {
  if (row.extra_info.prompt_type === template.name) return row;
  const lastUser = row.prompt.findLastIndex((m) => m.role === 'user');
  if (lastUser < 0)
    throw new Error(`row ${row.extra_info.index} has no user message for prompt_type ${template.name}`);
  const tools = row.extra_info.tools ?? [];
  const vars = {
    question: row.prompt[lastUser]!.content,
    tools: tools.map((t) => JSON.stringify(t)).join('\n'),
    tool_names: tools.map((t) => t.function.name).join(', '),
  };
  let prompt: ChatMessage[] = row.prompt.map((m, i) =>
    i === lastUser ? { ...m, content: render(template.user, vars) } : m,
  );
  if (template.system !== undefined) {
    const system: ChatMessage = { role: 'system', content: render(template.system, vars) };
    prompt = prompt[0]?.role === 'system' ? [system, ...prompt.slice(1)] : [system, ...prompt];
  }
  return { ...row, prompt, extra_info: { ...row.extra_info, prompt_type: template.name } };
}

/**
 * The row with its prompt rewritten by the `prompt_type` template: the system prompt set, the last user
 * message wrapped. Idempotent: a row records the template in `extra_info.prompt_type` and is not wrapped twice.
 */
export function applyPromptTemplate(row: DatasetRow, promptType: string, baseDir?: string): DatasetRow {
  return applyTemplate(row, loadPromptTemplate(promptType, baseDir));
}
