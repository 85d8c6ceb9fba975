// Rows with several user turns (BFCL multi-turn): the user messages fed after the model ends a turn, and the
// functions held out until a later turn (BFCL's miss-func category). A row brings them in extra_info under
// BFCL's names: `question` (all user turns, the first being the prompt) and `missed_function` ({turn: [function
// docs]}, as BFCL's loader and `toolrl bfcl dataset` write it).
import { type ChatMessage, ChatMessageSchema, type ToolSchema, ToolSchemaSchema } from '#shared/schemas/chat';
import { RowToolsSchema } from '#shared/schemas/dataset-row';
import { bfclSchemaToJsonSchema } from '#shared/tools/bfcl-schema';
import type { RowTools } from '#shared/tools/kind';
import type { EpisodeState } from './state.ts';

/**
 * BFCL's message for the turn where held-out functions arrive (its prompting-mode wording: the functions, then
 * DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC). The tools rendered in the system prompt cannot change
 * mid-trajectory without rewriting tokens already sampled, so the new functions are listed in the message.
 */
export const ADDITIONAL_FUNCTIONS_PROMPT =
  'I have updated some more functions you can choose from. What about now?';

type Row = { extra_info?: unknown } | Record<string, unknown>;

const asRecord = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

const extraInfoOf = (row: Row): Record<string, unknown> =>
  asRecord((row as { extra_info?: unknown }).extra_info);

/** A BFCL function doc (`{name, description, parameters}` with `dict`/`float` types) or an OpenAI tool schema. */
function toolSchemaOf(doc: unknown, where: string): ToolSchema {
  const d = asRecord(doc);
  if (typeof d.function === 'object') return ToolSchemaSchema.parse(d);
  if (typeof d.name !== 'string')
    throw new Error(
      `${where} is not a function doc (${JSON.stringify(doc).slice(0, 80)}); convert BFCL entries with \`toolrl bfcl dataset\`, which adds the docs`,
    );
  return ToolSchemaSchema.parse({
    type: 'function',
    function: {
      name: d.name,
      description: typeof d.description === 'string' ? d.description : '',
      parameters: bfclSchemaToJsonSchema(d.parameters ?? { type: 'dict', properties: {} }),
    },
  });
}

/** `{turn index: tool schemas}` of the functions held out until that user turn. */
export function heldOutTools(extraInfo: Record<string, unknown>): Map<number, ToolSchema[]> {
  const out = new Map<number, ToolSchema[]>();
  for (const [key, docs] of Object.entries(asRecord(extraInfo.missed_function))) {
    if (docs === null || docs === undefined) continue; // Parquet fills keys other rows have with null
    const turn = Number(key);
    if (!Number.isInteger(turn) || turn < 1 || !Array.isArray(docs))
      throw new Error(
        `extra_info.missed_function.${key} must map a user turn (>= 1) to a list of function docs`,
      );
    out.set(
      turn,
      docs.map((d, i) => toolSchemaOf(d, `extra_info.missed_function.${key}[${i}]`)),
    );
  }
  return out;
}

function functionsMessage(tools: ToolSchema[]): ChatMessage {
  const listing = tools.map((t) => JSON.stringify(t)).join('\n');
  return { role: 'user', content: `${listing}\n${ADDITIONAL_FUNCTIONS_PROMPT}` };
}

/**
 * The user turns after the prompt (turn 1, 2, …) of a row whose extra_info has BFCL's `question`, or undefined
 * for a single-turn row. A turn where held-out functions arrive gets BFCL's message listing them.
 */
export function userTurnsOf(row: Row): ChatMessage[][] | undefined {
  const extra = extraInfoOf(row);
  const question = extra.question;
  if (!Array.isArray(question) || question.length < 2 || !question.every(Array.isArray)) return undefined;
  const held = heldOutTools(extra);
  return question.slice(1).map((turn, i) => {
    const messages = (turn as unknown[]).map((m, j) => {
      const r = ChatMessageSchema.safeParse(m);
      if (!r.success)
        throw new Error(`extra_info.question[${i + 1}][${j}] is not a chat message: ${r.error.message}`);
      return r.data;
    });
    const tools = held.get(i + 1);
    if (tools) return [functionsMessage(tools), ...messages];
    if (messages.length === 0)
      throw new Error(`extra_info.question[${i + 1}] is empty and reveals no functions`);
    return messages;
  });
}

/** The user turn an episode is in: 0 for the prompt's, +1 for each user turn fed since. */
export const userTurnOf = (episode: EpisodeState | null | undefined): number => episode?.userTurn ?? 0;

/** The row's tools the model may call at `userTurn`: its own plus the held-out ones revealed by then. */
export function toolsAtTurn(row: Row, userTurn: number): ToolSchema[] {
  const extra = extraInfoOf(row);
  const parsed =
    extra.tools === undefined || extra.tools === null ? null : RowToolsSchema.safeParse(extra.tools);
  if (parsed && !parsed.success) throw new Error(`extra_info.tools: ${parsed.error.message}`);
  const own = parsed?.data ?? [];
  const revealed = [...heldOutTools(extra)]
    .filter(([turn]) => turn <= userTurn)
    .flatMap(([, tools]) => tools);
  return [...own, ...revealed];
}

/**
 * What the tool registry's `forRow` needs for one trajectory: the tools callable now, the row's extra_info (an
 * environment described by the row, such as BFCL's initial_config) and the calls made so far (environments
 * rebuilt by replay). Without an episode: the tools of the first turn, for rendering the prompt.
 */
export function episodeRowTools(row: Row, episode?: EpisodeState | null): RowTools {
  const extraInfo = extraInfoOf(row);
  const tools = toolsAtTurn(row, userTurnOf(episode));
  return {
    ...(tools.length > 0 ? { tools } : {}),
    ...(typeof extraInfo.category === 'string' ? { category: extraInfo.category } : {}),
    extraInfo,
    history: episode ? episode.turns.flatMap((t) => t.toolCalls) : [],
  };
}
