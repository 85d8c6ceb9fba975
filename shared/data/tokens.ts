// Prompt lengths in tokens, as the rollout sees them: the model's chat template applied to the prompt and
// its tools, with the generation prompt. Loads a local Hugging Face tokenizer folder (tokenizer.json +
// tokenizer_config.json) through transformers.js, never the network.
import type { DatasetRow } from '#shared/schemas/dataset-row';

export type CountTokens = (row: DatasetRow) => number;

/** A token counter for `tokenizerDir`; a folder without a usable tokenizer is an error that names it. */
export async function loadTokenCounter(tokenizerDir: string): Promise<CountTokens> {
  const { AutoTokenizer, env } = await import('@huggingface/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = '';
  let tokenizer: Awaited<ReturnType<typeof AutoTokenizer.from_pretrained>>;
  try {
    tokenizer = await AutoTokenizer.from_pretrained(tokenizerDir);
  } catch (err) {
    throw new Error(`cannot load a tokenizer from ${tokenizerDir}: ${(err as Error).message}`);
  }
  return (row) => {
    const ids = tokenizer.apply_chat_template(row.prompt as { role: string; content: string }[], {
      tools: row.extra_info.tools,
      add_generation_prompt: true,
      tokenize: true,
      return_tensor: false,
      return_dict: false,
    });
    return (ids as number[]).length;
  };
}
