// The bundle is a standard transformers.js model folder too, unquantised and int4 (MatMulNBits, an onnxruntime
// contrib operator transformers.js runs through onnxruntime-node): it loads in transformers.js and its greedy
// generation equals the engine's, token for token.
import { describe, expect, it } from 'vitest';
import { loadPolicy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING } from '#shared/policy/sampler';
import type { ChatMessage } from '#shared/schemas/chat';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';

describe('transformers.js compatibility', () => {
  it.each(['none', 'int4'] as const)(
    'loads the %s bundle and generates greedily the same tokens as the engine',
    async (quantization) => {
      const { bundleDir } = await tinyBundle({ quantization });
      const policy = await loadPolicy(bundleDir, { threads: 1 });
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
        expect(policy.manifest.quantization).toBe(quantization);
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
        await policy.dispose();
      }
    },
    120_000,
  );
});
