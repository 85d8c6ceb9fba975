// Token counts for `max_tool_response_length` from a tokenizer folder (a rollout bundle or a Hugging Face model
// folder), through shared/policy's tokenizer so the count is the one the rollout's template text will have.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type TokenCounter = (text: string) => number;

/** A counter from `dir`'s tokenizer.json and tokenizer_config.json; no special tokens are added to the text. */
export async function loadTokenCounter(dir: string): Promise<TokenCounter> {
  for (const name of ['tokenizer.json', 'tokenizer_config.json'])
    if (!existsSync(join(dir, name))) throw new Error(`${dir} has no ${name}: not a tokenizer folder`);
  const { ChatTokenizer } = await import('#shared/policy/tokenizer');
  // Nothing is rendered here, so a tokenizer without a chat template (a base model's) counts as well.
  const tok = await ChatTokenizer.load(dir, { chatTemplate: '' });
  return (text) => tok.encode(text).length;
}
