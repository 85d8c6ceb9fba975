// Rows written by other systems' converters, in the shape this reader parses: ShareGPT-style prompt messages
// (`from`/`value`, the ToolBench seed's `from`/`content`), a row id that is not a number (EnvTuning's
// "multi_turn_base_4"), EnvTuning's BFCL rows (everything under extra_info.interaction_kwargs, the functions in the
// system prompt), and the ToolBench seed's rows (the API list as JSON in the system prompt). A row already in
// toolrl's shape passes through unchanged.
import { isObject } from './records.ts';

type Row = Record<string, unknown>;

const SHAREGPT_ROLES: Record<string, string> = {
  human: 'user',
  user: 'user',
  gpt: 'assistant',
  assistant: 'assistant',
  system: 'system',
  function: 'tool',
  observation: 'tool',
  tool: 'tool',
};

/** `{"from": "human", "value": "…"}` as `{"role": "user", "content": "…"}`; a message with a role is kept. */
function chatMessage(m: unknown): unknown {
  if (!isObject(m) || 'role' in m || typeof m.from !== 'string') return m;
  const { from, value, ...rest } = m;
  return { ...rest, role: SHAREGPT_ROLES[from] ?? from, content: rest.content ?? value };
}

const parseJson = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

/** The JSON list that follows `marker` to the end of the system prompt, or undefined. */
function jsonListAfter(text: string, marker: string): unknown[] | undefined {
  const at = text.indexOf(marker);
  if (at < 0) return undefined;
  const rest = text.slice(at + marker.length).trim();
  if (!rest.startsWith('[')) return undefined;
  const parsed = parseJson(rest);
  return Array.isArray(parsed) ? parsed : undefined;
}

const systemText = (prompt: unknown): string => {
  const first = Array.isArray(prompt) ? prompt[0] : undefined;
  return isObject(first) && first.role === 'system' && typeof first.content === 'string' ? first.content : '';
};

/** EnvTuning's prompt ends with "Here is a list of functions in JSON format that you can invoke.\n[…]". */
const ENVTUNING_FUNCTIONS = 'Here is a list of functions in JSON format that you can invoke.';
/** The ToolBench seed's system prompt ends with "Available Tools:\n[…]". */
const TOOLBENCH_SEED_TOOLS = 'Available Tools:';

/** EnvTuning's BFCL fields, lifted to where toolrl's BFCL rows keep them (BFCL's names, in extra_info). */
function liftEnvTuning(extra: Row, prompt: unknown, bfclDocs: (docs: unknown[]) => unknown[]): Row {
  const kw = extra.interaction_kwargs;
  if (!isObject(kw) || kw.involved_classes === undefined || extra.involved_classes !== undefined)
    return extra;
  const out: Row = { ...extra };
  for (const key of ['id', 'initial_config', 'involved_classes', 'question', 'missed_function'])
    if (kw[key] !== undefined && out[key] === undefined) out[key] = parseJson(kw[key]);
  if (out.tools === undefined) {
    const docs = jsonListAfter(systemText(prompt), ENVTUNING_FUNCTIONS);
    if (docs) out.tools = bfclDocs(docs);
  }
  return out;
}

/**
 * The row as toolrl reads it. `bfclDocs` turns BFCL function docs (`"type": "dict"`) into tool schemas (the BFCL
 * converter's; passed in so this module stays free of the BFCL environment's imports).
 */
export function adaptForeignRow(raw: Row, bfclDocs: (docs: unknown[]) => unknown[]): Row {
  let row = raw;
  const prompt = parseJson(row.prompt);
  if (Array.isArray(prompt) && prompt.some((m) => isObject(m) && !('role' in m) && 'from' in m))
    row = { ...row, prompt: prompt.map(chatMessage) };
  if (!isObject(row.extra_info)) return row;
  let extra: Row = row.extra_info;
  const index = extra.index;
  if (typeof index === 'string') {
    // A numeric string is the number; any other id is kept as source_index, the row number becomes the index.
    const { index: _, ...rest } = extra;
    extra = /^\d+$/.test(index) ? { ...rest, index: Number(index) } : { ...rest, source_index: index };
  }
  extra = liftEnvTuning(extra, row.prompt, bfclDocs);
  if (extra.tools === undefined) {
    const tools = jsonListAfter(systemText(row.prompt), TOOLBENCH_SEED_TOOLS);
    if (tools) extra = { ...extra, tools };
  }
  return extra === row.extra_info ? row : { ...row, extra_info: extra };
}
