// Rows written by other systems' converters, in the shape this reader parses: ShareGPT-style prompt messages
// (`from`/`value`, the ToolBench seed's `from`/`content`), tool results under their older role name `function`
// (OpenAI's legacy function messages, as verl's older data and the ToolBench seed's first converter write them),
// a row id that is not a number (EnvTuning's "multi_turn_base_4"), EnvTuning's BFCL rows (everything under
// extra_info.interaction_kwargs, the functions in the system prompt), and the ToolBench seed's rows (the API list
// as JSON, or as ToolLLaMA's Python literal, in the system prompt). A row already in toolrl's shape passes through
// unchanged.
import { parsePythonLiteral } from '#shared/parsing/python-literal';
import { TOOLLLAMA_API_LIST_MARKER } from './converters/toolbench.ts';
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

/**
 * `{"from": "human", "value": "…"}` as `{"role": "user", "content": "…"}`; a message with a role keeps it, except
 * `function`, the older name of `tool` (its `name` is kept).
 */
function chatMessage(m: unknown): unknown {
  if (!isObject(m)) return m;
  if ('role' in m) return m.role === 'function' ? { ...m, role: 'tool' } : m;
  if (typeof m.from !== 'string') return m;
  const { from, value, ...rest } = m;
  return { ...rest, role: SHAREGPT_ROLES[from] ?? from, content: rest.content ?? value };
}

const isShareGpt = (m: unknown): boolean => isObject(m) && 'from' in m;

/**
 * A prompt of ShareGPT-style messages (they carry `from`) is a demonstration, as ToolLLaMA's conversations and
 * the ToolBench seed's first converter (which copied them whole into `prompt`) have it: its trailing assistant
 * messages are the demonstration's answer at that step, which the policy is to give itself. The prompt stops
 * before them; they are kept in extra_info.demonstration.
 */
function splitDemonstration(prompt: unknown[]): { prompt: unknown[]; answer: unknown[] } {
  let end = prompt.length;
  while (end > 1 && isObject(prompt[end - 1]) && (prompt[end - 1] as Row).role === 'assistant') end--;
  return { prompt: prompt.slice(0, end), answer: prompt.slice(end) };
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

/** ToolLLaMA's system prompt ends with its API list as a Python literal (ToolBench writes it with repr). */
function toolLlamaApis(text: string): unknown[] | undefined {
  const at = text.indexOf(TOOLLLAMA_API_LIST_MARKER);
  if (at < 0) return undefined;
  try {
    const parsed = parsePythonLiteral(text.slice(at + TOOLLLAMA_API_LIST_MARKER.length));
    return Array.isArray(parsed) ? parsed : undefined;
  } catch {
    return undefined; // not a list after all: the row keeps the run's tools
  }
}

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
  let demonstration: unknown[] = [];
  const prompt = parseJson(row.prompt);
  if (Array.isArray(prompt) && prompt.some((m) => isShareGpt(m) || (isObject(m) && m.role === 'function'))) {
    const messages = prompt.map(chatMessage);
    const split = prompt.some(isShareGpt) ? splitDemonstration(messages) : { prompt: messages, answer: [] };
    row = { ...row, prompt: split.prompt };
    demonstration = split.answer;
  }
  if (row.extra_info === undefined && demonstration.length > 0) row = { ...row, extra_info: {} };
  if (!isObject(row.extra_info)) return row;
  let extra: Row = row.extra_info;
  if (demonstration.length > 0 && extra.demonstration === undefined) extra = { ...extra, demonstration };
  const index = extra.index;
  if (typeof index === 'string') {
    // A numeric string is the number; any other id is kept as source_index, the row number becomes the index.
    const { index: _, ...rest } = extra;
    extra = /^\d+$/.test(index) ? { ...rest, index: Number(index) } : { ...rest, source_index: index };
  }
  extra = liftEnvTuning(extra, row.prompt, bfclDocs);
  if (extra.tools === undefined) {
    const system = systemText(row.prompt);
    const tools = jsonListAfter(system, TOOLBENCH_SEED_TOOLS) ?? toolLlamaApis(system);
    if (tools) extra = { ...extra, tools };
  }
  return extra === row.extra_info ? row : { ...row, extra_info: extra };
}
