// `model:` of the run config: the Hugging Face checkpoint to start from and how rollouts see it.
import { z } from 'zod';

export const LoraConfigSchema = z
  .object({
    rank: z.number().int().positive().describe('Rank r of the adapters.'),
    alpha: z.number().positive().describe('Scale alpha (the update is scaled by alpha / r).'),
    dropout: z.number().min(0).max(1).default(0).describe("Dropout on the adapters' input."),
    target_modules: z
      .array(z.string())
      .default(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'])
      .describe('The linear layers that get adapters (default: every linear layer of a Qwen2/Llama block).'),
    layers_to_transform: z
      .array(z.number().int().nonnegative())
      .min(1)
      .optional()
      .describe(
        "Only these decoder layers (0-based) get adapters (peft's layers_to_transform); unset: every layer. With " +
          'the top layers only, the backward pass stops at the lowest adapted layer: a step costs the forward plus ' +
          'the backward of those layers.',
      ),
  })
  .strict()
  .meta({
    id: 'LoraConfig',
    description:
      'LoRA adapters through peft (arXiv:2106.09685): with them the reference policy is the base without adapters and published weights are merged.',
  });

export const ModelConfigSchema = z
  .object({
    path: z
      .string()
      .min(1)
      .describe(
        'A Hugging Face model folder (config.json + safetensors + tokenizer), a Hub id, a `.gguf` file (converted once ' +
          'into .cache/models), the built-in `smollm2-135m-instruct` (installed by npm run setup), or `tiny` for the ' +
          'built-in test model.',
      ),
    dtype: z
      .enum(['bf16', 'fp32'])
      .default('bf16')
      .describe('Learner compute dtype (bf16 autocast keeps fp32 master weights).'),
    lora: LoraConfigSchema.optional(),
    gradient_checkpointing: z.boolean().default(false).describe('Recompute layer activations in backward.'),
    chat_template: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A chat template used instead of the model's own, in rollouts and in the SFT warm start: a built-in name (`chatml`, `smollm2`), a .jinja file relative to the config, or the Jinja text. toolrl train and submit put the text in the uploaded config. Needed for models whose template drops tool schemas or tool results (a run with such a template is refused when its first policy is published).",
      ),
    rollout_quantization: z
      .enum(['none', 'int8', 'int4'])
      .default('none')
      .describe('Weight-only quantisation of the rollout bundle for CPU rollouts.'),
    rollout_quantization_block_size: z
      .number()
      .int()
      .min(16)
      .refine((v) => (v & (v - 1)) === 0, 'must be a power of two >= 16 (16, 32, 64, 128, ...)')
      .default(32)
      .describe(
        "Weights per quantisation block (and scale) along a projection's input, for int8/int4: a power of two >= 16. Larger blocks decode faster on CPU (fewer scales to apply; int4 at Qwen2.5-0.5B's shape, batch 1: 128 takes ~0.7x the step time of 32, BENCHMARKS.md \"Rollout engine\") and follow the learner's policy less closely.",
      ),
  })
  .strict()
  .meta({
    id: 'ModelConfig',
    description:
      "`model:` of the run config: the checkpoint to start from, the learner's dtype, LoRA, and how rollouts see the model.",
  });
export type ModelConfig = z.infer<typeof ModelConfigSchema>;
