// The bundle is a standard transformers.js model folder too: it loads in transformers.js and its greedy
// generation equals the engine's, token for token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPolicy, type Policy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING } from '#shared/policy/sampler';
import type { ChatMessage } from '#shared/schemas/chat';
import { tinyBundle } from '../../helpers/policy-fixture.ts';

let bundleDir: string;
let policy: Policy;
beforeAll(async () => {
  ({ bundleDir } = await tinyBundle());
  policy = await loadPolicy(bundleDir, { threads: 1 });
});
afterAll(async () => policy?.dispose());

describe('transformers.js compatibility', () => {
  it('loads the bundle and generates greedily the same tokens as the engine', async () => {
    const { AutoModelForCausalLM, AutoTokenizer, env } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.localModelPath = '/';
    const tokenizer = await AutoTokenizer.from_pretrained(bundleDir);
    const model = await AutoModelForCausalLM.from_pretrained(bundleDir, {
      subfolder: '',
      model_file_name: 'model',
      dtype: 'fp32',
      device: 'cpu',
      session_options: { intraOpNumThreads: 1 },
    });
    try {
      const messages: ChatMessage[] = [{ role: 'user', content: 'What is 17 * 23?' }];
      const inputs = tokenizer.apply_chat_template(messages, {
        add_generation_prompt: true,
        return_dict: true,
      }) as {
        input_ids: { tolist(): bigint[][] };
      };
      const promptIds = inputs.input_ids.tolist()[0]!.map(Number);
      expect(promptIds).toEqual(policy.renderPrompt(messages, []));

      const out = (await model.generate({ ...inputs, max_new_tokens: 16, do_sample: false })) as {
        tolist(): bigint[][];
      };
      const theirs = out.tolist()[0]!.map(Number).slice(promptIds.length);
      const [ours] = await policy.sampleGroup(promptIds, 1, {
        ...DEFAULT_SAMPLING,
        temperature: 0,
        maxNewTokens: 16,
      });
      expect(theirs.length).toBeGreaterThan(0);
      expect(ours!.tokenIds).toEqual(theirs);
    } finally {
      await model.dispose();
    }
  });
});
