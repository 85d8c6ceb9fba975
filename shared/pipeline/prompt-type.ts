// `data.prompt_type` applied by the feeder: each row's prompt rewritten by the run's (or its curriculum stage's)
// template just before it becomes a rollout request, so a run can switch templates without rewriting its data.
import { existsSync } from 'node:fs';
import { basename, isAbsolute, join, resolve } from 'node:path';
import {
  applyTemplate,
  loadPromptTemplate,
  looksLikePath,
  type PromptTemplate,
} from '#shared/data/prompts/templates';
import { PermanentError } from '#shared/ports/errors';
import type { DatasetRow } from '#shared/schemas/dataset-row';

/** The template cannot be loaded, or a row was already written with another one: the run cannot go on. */
export class PromptTypeError extends PermanentError {
  override name = 'PromptTypeError';
}

/**
 * Loads `prompt_type`: a built-in name, or a file relative to the run's base folder (the config's folder when
 * embedded; on AWS the uploaded inputs, stored flat by file name, hence the fallback to the base name).
 */
export function runPromptTemplate(promptType: string, baseDir: string): PromptTemplate {
  let ref = promptType;
  if (looksLikePath(promptType) && !isAbsolute(promptType) && !existsSync(resolve(baseDir, promptType))) {
    const flat = join(baseDir, basename(promptType));
    if (existsSync(flat)) ref = flat;
  }
  try {
    return loadPromptTemplate(ref, baseDir);
  } catch (err) {
    throw new PromptTypeError(`data.prompt_type ${promptType}: ${(err as Error).message}`);
  }
}

/**
 * The row under `template`. Idempotent: a row already written with it (`dataset convert --prompt-type`, recorded
 * in extra_info.prompt_type) is returned as it is. A row written with another template is refused: its question
 * is already wrapped, and wrapping it again would nest two templates.
 */
export function applyRunTemplate(row: DatasetRow, template: PromptTemplate, where: string): DatasetRow {
  const own = row.extra_info.prompt_type;
  if (own !== undefined && own !== template.name)
    throw new PromptTypeError(
      `${where} was written with prompt_type ${own} (extra_info.prompt_type) and data.prompt_type asks for ${template.name}; a row takes one template: drop data.prompt_type to keep the rows' own, or convert the data again without --prompt-type`,
    );
  try {
    return applyTemplate(row, template);
  } catch (err) {
    throw new PromptTypeError(`${where}: ${(err as Error).message}`);
  }
}
