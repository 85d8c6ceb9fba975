import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { toolrlName } from '#shared/config/resolve';
import { applyPromptTemplate, listPromptTemplates, loadPromptTemplate } from '#shared/data/prompts/templates';
import { type DatasetRow, DatasetRowSchema } from '#shared/schemas/dataset-row';

const row = (extra: Record<string, unknown> = {}): DatasetRow =>
  DatasetRowSchema.parse({
    data_source: 'aime',
    prompt: [
      { role: 'system', content: 'old system' },
      { role: 'user', content: 'Find x.' },
    ],
    extra_info: { index: 3, ...extra },
  });

describe('prompt templates', () => {
  it('ships toolcall, retool and search, each valid', () => {
    expect(listPromptTemplates().map((t) => t.template.name)).toEqual(['retool', 'search', 'toolcall']);
  });

  it('retool: replaces the system prompt, wraps the last user message, records the template once', () => {
    const once = applyPromptTemplate(row(), 'retool');
    expect(once.prompt).toHaveLength(2);
    expect(once.prompt[0]!.content).toMatch(/code_interpreter tool/);
    expect(once.prompt[1]!.content).toBe('Find x.\n\nGive the final answer in the form \\boxed{answer}.');
    expect(once.extra_info.prompt_type).toBe('retool');
    // MindSpeed-RL's name for it, as the resolver translates a config's or the CLI's prompt_type
    expect(applyPromptTemplate(once, toolrlName.promptType('qwen_retool'))).toBe(once);
  });

  it('search: puts the system prompt first when the row has none, question after the instructions', () => {
    const r = DatasetRowSchema.parse({
      data_source: 'nq',
      prompt: [{ role: 'user', content: 'who wrote hamlet?' }],
      extra_info: { index: 0 },
    });
    const out = applyPromptTemplate(r, 'search');
    expect(out.prompt.map((m) => m.role)).toEqual(['system', 'user']);
    expect(out.prompt[1]!.content).toMatch(/<answer> and <\/answer>[\s\S]*\n\nQuestion: who wrote hamlet\?$/);
  });

  it('a user copy with {{tools}} and {{tool_names}} is loaded from a path relative to baseDir', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrl-prompt-'));
    writeFileSync(
      join(dir, 'mine.yaml'),
      'name: mine\nsystem: "Tools: {{tool_names}}\\n{{tools}}"\nuser: "Q: {{question}}"\n',
    );
    const tools = [{ type: 'function', function: { name: 'calculator', description: 'd', parameters: {} } }];
    const out = applyPromptTemplate(row({ tools }), './mine.yaml', dir);
    expect(out.prompt[0]!.content).toBe(
      'Tools: calculator\n{"type":"function","function":{"name":"calculator","description":"d","parameters":{}}}',
    );
    expect(out.prompt[1]!.content).toBe('Q: Find x.');
  });

  it('names an unknown template, an unknown placeholder and a bad key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrl-prompt-'));
    writeFileSync(join(dir, 'typo.yaml'), 'name: t\nuser: "{{questoin}}"\n');
    writeFileSync(join(dir, 'extra.yaml'), 'name: t\nusr: "{{question}}"\n');
    expect(() => loadPromptTemplate('nope')).toThrow(
      /unknown prompt_type nope; built-in: retool, search, toolcall/,
    );
    expect(() => loadPromptTemplate('typo.yaml', dir)).toThrow(/unknown placeholder \{\{questoin\}\}/);
    expect(() => loadPromptTemplate('extra.yaml', dir)).toThrow(/extra\.yaml: .*usr/);
    expect(() => loadPromptTemplate('missing.yaml', dir)).toThrow(/does not exist/);
  });
});
