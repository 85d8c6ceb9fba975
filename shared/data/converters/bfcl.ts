// `bfcl`: BFCL v3 multi-turn entries (`BFCL_v3_multi_turn_*.json`, one JSON object per line) joined with
// their ground truth from the possible-answer file (`possible_answer/<same name>` next to the input, or
// `--answers`). The input may also be a folder: every `BFCL_v3_multi_turn_*.json` in it is converted.
// The prompt is the first turn; everything the BFCL environment needs stays in extra_info under BFCL's own
// names: `question` (all turns), `initial_config`, `involved_classes`, `path`, `missed_function`, plus
// `id` and `category`. The ground truth is BFCL's list of call strings per turn.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { ToolSchema } from '#shared/schemas/chat';
import { InputError, isObject, readRecords, recordObject } from '../records.ts';
import { chatMessages } from './messages.ts';
import type { ConvertContext, ConvertedRow, Converter, ConvertResult } from './types.ts';

const BFCL_FILE = /^BFCL_v\d+_multi_turn_.*\.jsonl?$/;
const BFCL_TYPES: Record<string, string | undefined> = {
  dict: 'object',
  float: 'number',
  tuple: 'array',
  any: undefined,
};

/** BFCL's Python-flavoured JSON Schema (`dict`, `float`, `tuple`, `any`) as standard JSON Schema. */
export function bfclSchemaToJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(bfclSchemaToJsonSchema);
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'type' && typeof v === 'string') {
      const mapped = v in BFCL_TYPES ? BFCL_TYPES[v] : v;
      if (mapped !== undefined) out.type = mapped;
    } else if (k === 'properties' && isObject(v)) {
      out.properties = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, bfclSchemaToJsonSchema(s)]));
    } else if (k === 'items' || k === 'additionalProperties') {
      out[k] = bfclSchemaToJsonSchema(v);
    } else out[k] = v;
  }
  return out;
}

function functionDocToTool(doc: unknown, where: string): ToolSchema {
  if (!isObject(doc) || typeof doc.name !== 'string')
    throw new InputError(`${where}: a "function" entry has no name`);
  return {
    type: 'function',
    function: {
      name: doc.name,
      description: typeof doc.description === 'string' ? doc.description : '',
      parameters: (bfclSchemaToJsonSchema(doc.parameters ?? { type: 'dict', properties: {} }) ??
        {}) as Record<string, unknown>,
    },
  };
}

/** `id -> ground_truth` from a possible-answer file. */
function readAnswers(path: string): Map<string, unknown[]> {
  const answers = new Map<string, unknown[]>();
  for (const rec of readRecords(path)) {
    const obj = recordObject(path, rec);
    if (typeof obj.id !== 'string' || !Array.isArray(obj.ground_truth)) {
      throw new InputError(`${path} ${rec.at}: expected {"id": string, "ground_truth": [[call, …], …]}`);
    }
    answers.set(obj.id, obj.ground_truth);
  }
  return answers;
}

function answersPathFor(input: string, explicit: string | undefined): string {
  if (explicit) return explicit;
  const sibling = join(dirname(input), 'possible_answer', basename(input));
  if (!existsSync(sibling)) {
    throw new InputError(
      `${input}: no ground truth found at ${sibling}; pass the possible-answer file with --answers`,
    );
  }
  return sibling;
}

const isCallList = (turn: unknown): turn is string[] =>
  Array.isArray(turn) && turn.every((c) => typeof c === 'string');

function convertFile(input: string, answersPath: string, dataSource: string | undefined): ConvertedRow[] {
  const answers = readAnswers(answersPath);
  return readRecords(input).map((rec) => {
    const obj = recordObject(input, rec);
    const where = `${input} ${rec.at}`;
    if (typeof obj.id !== 'string') throw new InputError(`${where}: needs an "id" string`);
    const id = obj.id;
    const at = `${where} (${id})`;
    if (!Array.isArray(obj.question) || obj.question.length === 0) {
      throw new InputError(`${at}: "question" must be a non-empty list of turns`);
    }
    const turns = obj.question.map((turn, t) => chatMessages(turn, at, `question[${t}]`));
    if (turns[0]!.length === 0) throw new InputError(`${at}: the first turn has no messages`);
    if (!isObject(obj.initial_config)) throw new InputError(`${at}: "initial_config" must be an object`);
    const classes = obj.involved_classes;
    if (!Array.isArray(classes) || !classes.every((c) => typeof c === 'string')) {
      throw new InputError(`${at}: "involved_classes" must be a list of class names`);
    }
    const groundTruth = answers.get(id);
    if (!groundTruth) throw new InputError(`${at}: no ground truth for ${id} in ${answersPath}`);
    if (groundTruth.length !== turns.length || !groundTruth.every(isCallList)) {
      throw new InputError(
        `${at}: the ground truth in ${answersPath} must be one list of call strings per turn (${turns.length} turns, got ${JSON.stringify(groundTruth).slice(0, 120)})`,
      );
    }
    const category = id.replace(/_\d+$/, '');
    const extra: Record<string, unknown> = {
      id,
      category,
      question: turns,
      initial_config: obj.initial_config,
      involved_classes: classes,
    };
    if (Array.isArray(obj.path)) extra.path = obj.path;
    if (obj.missed_function !== undefined) extra.missed_function = obj.missed_function;
    if (Array.isArray(obj.function)) extra.tools = obj.function.map((f) => functionDocToTool(f, at));
    return {
      at: `${basename(input)} ${rec.at}`,
      row: {
        data_source: dataSource ?? `bfcl_${category}`,
        prompt: turns[0]!,
        reward_model: { style: 'rule', ground_truth: groundTruth },
        extra_info: extra,
      },
    };
  });
}

export const bfclConverter: Converter = {
  format: 'bfcl',
  description:
    'BFCL v3 multi-turn entries (a file or a folder of BFCL_v3_multi_turn_*.json) with possible_answer ground truth',
  convert(ctx: ConvertContext): ConvertResult {
    if (existsSync(ctx.input) && statSync(ctx.input).isDirectory()) {
      if (ctx.answers)
        throw new InputError('--answers applies to one BFCL file; a folder uses its possible_answer/ folder');
      const files = readdirSync(ctx.input)
        .filter((f) => BFCL_FILE.test(f))
        .sort();
      if (files.length === 0) throw new InputError(`${ctx.input} has no BFCL_v3_multi_turn_*.json files`);
      const rows = files.flatMap((f) => {
        const input = join(ctx.input, f);
        return convertFile(input, answersPathFor(input, undefined), ctx.dataSource);
      });
      return { rows, notes: [`converted ${files.length} files: ${files.join(', ')}`] };
    }
    return {
      rows: convertFile(ctx.input, answersPathFor(ctx.input, ctx.answers), ctx.dataSource),
      notes: [],
    };
  },
};
