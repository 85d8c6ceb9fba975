// `bfcl`: BFCL v3 multi-turn entries (`BFCL_v3_multi_turn_*.json`, one JSON object per line) joined with
// their ground truth from the possible-answer file (`possible_answer/<same name>` next to the input, or
// `--answers`). The input may also be a folder: every `BFCL_v3_multi_turn_*.json` in it is converted.
// The prompt is the first turn; everything the BFCL environment needs stays in extra_info under BFCL's own
// names: `question` (all turns), `initial_config`, `involved_classes`, `path`, `missed_function`, plus
// `id` and `category`. The ground truth is BFCL's list of call strings per turn. The tools are the entry's
// `function` docs: entries prepared by BFCL's loader (`toolrl bfcl dataset`) carry them; raw entries from BFCL's
// data files do not, and get them from BFCL's own loader code in its Python environment (shared/bfcl).

import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { chatMessages } from '#shared/data/converters/messages';
import type { ConvertContext, ConvertedRow, Converter, ConvertResult } from '#shared/data/converters/types';
import { InputError, isObject, readRecords, recordObject } from '#shared/data/records';
import type { ToolSchema } from '#shared/schemas/chat';
import { bfclSchemaToJsonSchema } from '#shared/tools/bfcl-schema';
import { BfclPrepareError, prepareBfclEntries } from './prepare.ts';

const BFCL_FILE = /^BFCL_v\d+_multi_turn_.*\.jsonl?$/;

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

/** BFCL's `missed_function` of a raw entry names functions; a prepared one holds their docs. */
const namesHeldOut = (missed: unknown): boolean =>
  isObject(missed) &&
  Object.values(missed).some((v) => Array.isArray(v) && v.some((x) => typeof x === 'string'));

interface Draft {
  at: string;
  obj: Record<string, unknown>;
  row: ConvertedRow;
}

/** One entry checked and made a row, all but its tools. */
function draftRow(
  input: string,
  rec: { at: string; obj: Record<string, unknown> },
  answers: Map<string, unknown[]>,
  answersPath: string,
  dataSource: string | undefined,
): Draft {
  const obj = rec.obj;
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
  if (!Array.isArray(classes) || classes.length === 0 || !classes.every((c) => typeof c === 'string')) {
    throw new InputError(`${at}: "involved_classes" must be a non-empty list of class names`);
  }
  if (Array.isArray(obj.function) && namesHeldOut(obj.missed_function))
    throw new InputError(
      `${at}: "missed_function" names functions but the entry already has its "function" docs; give the raw entry (without "function") or one prepared by BFCL's loader (held-out docs under missed_function)`,
    );
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
  return {
    at,
    obj,
    row: {
      at: `${basename(input)} ${rec.at}`,
      row: {
        data_source: dataSource ?? `bfcl_${category}`,
        prompt: turns[0]!,
        reward_model: { style: 'rule', ground_truth: groundTruth },
        extra_info: extra,
      },
    },
  };
}

/**
 * `function` and `missed_function` of each entry: its own when it has `function` docs, else as BFCL's loader
 * prepares them (one call to the BFCL environment per file, with only what the loader reads).
 */
function functionDocs(input: string, drafts: readonly Draft[], python: string | undefined) {
  const raw = drafts.filter((d) => !Array.isArray(d.obj.function));
  let prepared: Record<string, unknown>[] = [];
  try {
    prepared = prepareBfclEntries(
      raw.map(({ obj }) => ({
        id: obj.id,
        involved_classes: obj.involved_classes,
        ...(obj.missed_function !== undefined ? { missed_function: obj.missed_function } : {}),
      })),
      python ? { python } : {},
    );
  } catch (err) {
    if (!(err instanceof BfclPrepareError)) throw err;
    const ids = raw.map((d) => String(d.obj.id));
    const shown = ids.length > 3 ? `${ids.slice(0, 3).join(', ')}, …` : ids.join(', ');
    const what = raw.length === 1 ? `1 entry (${shown}) has` : `${raw.length} entries (${shown}) have`;
    throw new InputError(`${input}: ${what} no "function" docs; ${err.message}`);
  }
  const byDraft = new Map(raw.map((d, i) => [d, prepared[i]!]));
  return drafts.map((d) => {
    const src = byDraft.get(d) ?? d.obj;
    return { function: src.function, missed_function: src.missed_function };
  });
}

function convertFile(
  input: string,
  answersPath: string,
  dataSource: string | undefined,
  python: string | undefined,
): ConvertedRow[] {
  const answers = readAnswers(answersPath);
  // Every entry checked first, so bad input is reported without the BFCL environment.
  const drafts = readRecords(input).map((rec) =>
    draftRow(input, { at: rec.at, obj: recordObject(input, rec) }, answers, answersPath, dataSource),
  );
  const docs = functionDocs(input, drafts, python);
  return drafts.map((d, i) => {
    const { function: fns, missed_function: missed } = docs[i]!;
    const extra = d.row.row.extra_info;
    if (missed !== undefined) extra.missed_function = missed;
    if (!Array.isArray(fns) || fns.length === 0)
      throw new InputError(`${d.at}: no function docs for its involved classes`);
    extra.tools = fns.map((f) => functionDocToTool(f, d.at));
    return d.row;
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
        return convertFile(input, answersPathFor(input, undefined), ctx.dataSource, ctx.bfclPython);
      });
      return { rows, notes: [`converted ${files.length} files: ${files.join(', ')}`] };
    }
    return {
      rows: convertFile(ctx.input, answersPathFor(ctx.input, ctx.answers), ctx.dataSource, ctx.bfclPython),
      notes: [],
    };
  },
};
