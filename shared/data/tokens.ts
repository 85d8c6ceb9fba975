// Prompt lengths in tokens, as the rollout sees them: the model's chat template applied to the prompt and
// its tools, with the generation prompt. Loads a local Hugging Face tokenizer folder (tokenizer.json +
// tokenizer_config.json, chat_template.jinja when the template is there) through shared/policy's tokenizer.
import { ChatTokenizer } from '#shared/policy/tokenizer';
import type { DatasetRow } from '#shared/schemas/dataset-row';

export type CountTokens = (row: DatasetRow) => number;

/** A token counter for `tokenizerDir`; a folder without a usable tokenizer is an error that names it. */
export async function loadTokenCounter(tokenizerDir: string): Promise<CountTokens> {
  let tokenizer: ChatTokenizer;
  try {
    tokenizer = await ChatTokenizer.load(tokenizerDir);
  } catch (err) {
    throw new Error(`cannot load a tokenizer from ${tokenizerDir}: ${(err as Error).message}`);
  }
  // The row's messages and tools go to the template as the row holds them (an empty tool list stays a list).
  return (row) =>
    tokenizer.encode(
      tokenizer.applyChatTemplate(row.prompt, { tools: row.extra_info.tools, addGenerationPrompt: true }),
    ).length;
}
