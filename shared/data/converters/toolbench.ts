// `toolbench`: ToolBench / StableToolBench data, as a JSON array (or JSON Lines) of either
//  - ToolLLaMA conversations `{"id", "conversations": [{"from", "value"}]}`: the system prompt carries the
//    API list as a Python literal after "Specifically, you have access to the following APIs:"; the
//    prompt is the system text before it plus the first user message, the list becomes per-row tools, and
//    the routes come from the function names (`<api>_for_<tool>`, ToolBench's convention). ToolLLaMA data
//    names no category: the entry's own `category` if it has one, else `--category`;
//  - StableToolBench queries `{"query", "query_id", "api_list": [...], "relevant APIs": [[tool, api]]}`:
//    tools are built from `api_list` as StableToolBench names them, plus `Finish`.
// `extra_info` gets the tools, the category and the routes a StableToolBench server needs (`apis`).

import { parsePythonLiteral } from '#shared/parsing/python-literal';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { FINISH_SCHEMA } from '#shared/tools/toolbench/finish';
import { InputError, isObject, readRecords, recordObject } from '../records.ts';
import { chatMessages } from './messages.ts';
import { type ApiRoute, apiFunctionName, type RapidApi, rapidApiToTool } from './toolbench-apis.ts';
import type { ConvertContext, ConvertedRow, Converter, ConvertResult, RowDraft } from './types.ts';

/** What precedes the API list (a Python literal) in ToolLLaMA's system prompt. */
export const TOOLLLAMA_API_LIST_MARKER = 'Specifically, you have access to the following APIs:';
const ROLE_OF: Record<string, ChatMessage['role']> = {
  system: 'system',
  user: 'user',
  assistant: 'assistant',
  function: 'tool',
};

/** The system prompt of our query rows (ToolLLaMA rows keep their own). */
export const TOOLBENCH_SYSTEM_PROMPT =
  "You handle the user's request in real time with the functions you are given. Call them one step at a time " +
  'and read each result. Use only the function names listed, not the original tool names. At the end, always ' +
  'call Finish: with return_type "give_answer" and a final_answer that contains everything the user needs, or ' +
  'with "give_up_and_restart" if the functions keep failing or the task cannot be done.';

/**
 * The system prompt of query rows in ToolLLaMA's ReAct format (`--call-format react`, parsed by the `react`
 * tool-call format): the instructions, then the functions as a JSON list, as ToolLLaMA's prompt lists its APIs.
 */
export function toolbenchReactSystemPrompt(tools: readonly ToolSchema[]): string {
  const functions = tools.map((t) => ({
    name: t.function.name,
    description: t.function.description,
    parameters: t.function.parameters,
  }));
  return (
    "You handle the user's request in real time with the functions listed below, one step at a time. At each " +
    'step write three lines:\nThought: what you know so far and what to do next\nAction: the name of one ' +
    "function, exactly as listed\nAction Input: its arguments as one JSON object\nthen stop: the function's " +
    'result comes back to you. At the end, always call Finish: with return_type "give_answer" and a final_answer ' +
    'that contains everything the user needs, or with "give_up_and_restart" if the task cannot be done.\n' +
    `Specifically, you have access to the following APIs: ${JSON.stringify(functions)}`
  );
}

function toolFromFunctionDoc(doc: unknown, where: string): ToolSchema {
  if (!isObject(doc) || typeof doc.name !== 'string') {
    throw new InputError(
      `${where}: an API in the system prompt has no name: ${JSON.stringify(doc).slice(0, 120)}`,
    );
  }
  return {
    type: 'function',
    function: {
      name: doc.name,
      description: typeof doc.description === 'string' ? doc.description : '',
      parameters: isObject(doc.parameters) ? doc.parameters : { type: 'object', properties: {} },
    },
  };
}

/** Names of the functions a ToolLLaMA demonstration calls (`Action: name` lines), Finish excluded. */
function calledFunctions(messages: { from: string; value: string }[]): string[] {
  const names = new Set<string>();
  for (const m of messages) {
    if (m.from !== 'assistant') continue;
    for (const [, name] of m.value.matchAll(/^Action:\s*(\S+)/gm)) if (name !== 'Finish') names.add(name!);
  }
  return [...names];
}

/**
 * Routes of a ToolLLaMA row's APIs, from their names: `<api>_for_<tool>` split at the last `_for_` (the server
 * finds `{category}/{tool}_for_{category}/{api}.json`). Finish and names without `_for_` have none.
 */
function routesFromNames(tools: ToolSchema[], category: string | undefined): Partial<ApiRoute>[] {
  return tools.flatMap((t) => {
    const name = t.function.name;
    const cut = name.lastIndexOf('_for_');
    if (name === FINISH_SCHEMA.function.name || cut <= 0) return [];
    return [
      {
        name,
        ...(category !== undefined ? { category_name: category } : {}),
        tool_name: name.slice(cut + '_for_'.length),
        api_name: name.slice(0, cut),
      },
    ];
  });
}

function fromConversation(
  obj: Record<string, unknown>,
  where: string,
  fallbackCategory: string | undefined,
): RowDraft {
  const turns = obj.conversations;
  if (!Array.isArray(turns) || turns.length === 0)
    throw new InputError(`${where}: "conversations" must be a non-empty list`);
  const raw = turns.map((t, i) => {
    if (!isObject(t) || typeof t.from !== 'string' || typeof t.value !== 'string') {
      throw new InputError(`${where}: conversations[${i}] must be {"from": string, "value": string}`);
    }
    if (!(t.from in ROLE_OF)) {
      throw new InputError(
        `${where}: conversations[${i}].from: unknown role ${JSON.stringify(t.from)} (expected system, user, assistant, function)`,
      );
    }
    return { from: t.from, value: t.value };
  });
  const system = raw.find((t) => t.from === 'system');
  const user = raw.find((t) => t.from === 'user');
  if (!system || !user) throw new InputError(`${where}: conversations need a system and a user message`);
  const cut = system.value.indexOf(TOOLLLAMA_API_LIST_MARKER);
  if (cut < 0)
    throw new InputError(
      `${where}: the system message has no API list ("${TOOLLLAMA_API_LIST_MARKER} [...]")`,
    );
  let apis: unknown;
  try {
    apis = parsePythonLiteral(system.value.slice(cut + TOOLLLAMA_API_LIST_MARKER.length));
  } catch (err) {
    throw new InputError(
      `${where}: the API list in the system message does not parse: ${(err as Error).message}`,
    );
  }
  if (!Array.isArray(apis))
    throw new InputError(`${where}: the API list in the system message is not a list`);
  const tools = apis.map((a) => toolFromFunctionDoc(a, where));
  const prompt = chatMessages(
    [
      { role: 'system', content: system.value.slice(0, cut).trim() },
      { role: 'user', content: user.value },
    ],
    where,
    'conversations',
  );
  const own = [obj.category, obj.category_name].find((c) => typeof c === 'string' && c.trim() !== '');
  const category = (own as string | undefined) ?? fallbackCategory;
  const extra: Record<string, unknown> = { tools, apis: routesFromNames(tools, category) };
  if (category !== undefined) extra.category = category;
  if (obj.id !== undefined) extra.id = obj.id;
  return {
    data_source: 'toolbench',
    prompt,
    reward_model: { style: 'rule', ground_truth: { relevant_apis: calledFunctions(raw) } },
    extra_info: extra,
  };
}

function fromQuery(obj: Record<string, unknown>, where: string, callFormat: 'hermes' | 'react'): RowDraft {
  if (typeof obj.query !== 'string' || obj.query.trim() === '')
    throw new InputError(`${where}: "query" must be a non-empty string`);
  const apiList = obj.api_list;
  if (!Array.isArray(apiList) || apiList.length === 0)
    throw new InputError(`${where}: "api_list" must be a non-empty list`);
  const converted = apiList.map((a, i) => {
    if (
      !isObject(a) ||
      typeof a.tool_name !== 'string' ||
      typeof a.api_name !== 'string' ||
      typeof a.category_name !== 'string'
    ) {
      throw new InputError(
        `${where}: api_list[${i}] needs "category_name", "tool_name" and "api_name" strings`,
      );
    }
    return rapidApiToTool(a as unknown as RapidApi);
  });
  const relevant = Array.isArray(obj['relevant APIs']) ? (obj['relevant APIs'] as unknown[]) : [];
  const relevantApis = relevant.flatMap((pair) =>
    Array.isArray(pair) && typeof pair[0] === 'string' && typeof pair[1] === 'string'
      ? [apiFunctionName(pair[1], pair[0])]
      : [],
  );
  const tools = [...converted.map((c) => c.tool), FINISH_SCHEMA];
  const extra: Record<string, unknown> = {
    tools,
    category: converted[0]!.route.category_name,
    apis: converted.map((c) => c.route),
  };
  if (obj.query_id !== undefined) extra.query_id = obj.query_id;
  return {
    data_source: 'toolbench',
    prompt: [
      {
        role: 'system',
        content: callFormat === 'react' ? toolbenchReactSystemPrompt(tools) : TOOLBENCH_SYSTEM_PROMPT,
      },
      { role: 'user', content: obj.query.trim() },
    ],
    reward_model: { style: 'rule', ground_truth: { relevant_apis: relevantApis } },
    extra_info: extra,
  };
}

export const toolbenchConverter: Converter = {
  format: 'toolbench',
  description:
    'StableToolBench queries (api_list) or ToolLLaMA conversations (from/value, API list in the system prompt)',
  convert(ctx: ConvertContext): ConvertResult {
    const rows: ConvertedRow[] = [];
    const seen = new Set<string>();
    let duplicates = 0;
    for (const rec of readRecords(ctx.input)) {
      const obj = recordObject(ctx.input, rec);
      const where = `${ctx.input} ${rec.at}`;
      let row: RowDraft;
      if ('conversations' in obj) row = fromConversation(obj, where, ctx.category);
      else if ('api_list' in obj || 'query' in obj) row = fromQuery(obj, where, ctx.callFormat ?? 'hermes');
      else
        throw new InputError(
          `${where}: expected a ToolLLaMA "conversations" entry or a StableToolBench "query" with "api_list"`,
        );
      // ToolLLaMA keeps one entry per step of a solution ("Step 2: …", "Step 4: …"): one RL prompt each.
      const key = JSON.stringify(row.prompt);
      if (seen.has(key)) {
        duplicates++;
        continue;
      }
      seen.add(key);
      if (ctx.dataSource) row.data_source = ctx.dataSource;
      rows.push({ at: rec.at, row });
    }
    const notes = duplicates
      ? [`dropped ${duplicates} entries whose prompt repeats an earlier one (ToolLLaMA steps)`]
      : [];
    const uncategorised = rows.filter((r) => r.row.extra_info.category === undefined).length;
    if (uncategorised > 0)
      notes.push(
        `${uncategorised === 1 ? '1 row has' : `${uncategorised} rows have`} no category (ToolLLaMA data names none): a StableToolBench server needs one to find an API; pass --category, or set the toolbench tool's \`category\` in the run's tools`,
      );
    return { rows, notes };
  },
};
