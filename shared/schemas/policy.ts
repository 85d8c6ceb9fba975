// The published policy: the bundle manifest and the one mutable pointer, LATEST.json.
import { z } from 'zod';

/**
 * `runs/<runId>/policy/LATEST.json`, moved only after `policy/v<N>/` is complete.
 * @example {"version": 3, "prefix": "runs/r-1a2b/policy/v3/", "sha256": "…"}
 */
export const PolicyPointerSchema = z.object({
  version: z.number().int().nonnegative(),
  prefix: z.string().min(1),
  /** sha256 of the bundle's manifest.json. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type PolicyPointer = z.infer<typeof PolicyPointerSchema>;

/**
 * `manifest.json` of a rollout bundle. The graph is exported once per run; a new version republishes only
 * the weights file, whose layout (tensor names, shapes, dtypes, offsets) must hash to `layoutHash`.
 */
export const BundleManifestSchema = z.object({
  schemaVersion: z.literal(1),
  version: z.number().int().nonnegative(),
  architecture: z.string(),
  modelType: z.string(),
  dtype: z.enum(['fp32', 'fp16', 'bf16']),
  quantization: z.enum(['none', 'int8', 'int4']).default('none'),
  layoutHash: z.string(),
  numLayers: z.number().int().positive(),
  numKeyValueHeads: z.number().int().positive(),
  headDim: z.number().int().positive(),
  vocabSize: z.number().int().positive(),
  eosTokenIds: z.array(z.number().int().nonnegative()),
  files: z.record(
    z.string(),
    z.object({
      sha256: z.string(),
      bytes: z.number().int().nonnegative(),
      /**
       * The version whose folder holds the file, when it is not this one's: in a bucket, a version uploads only the
       * files that changed (the weights), and names where the unchanged ones (graph, tokenizer) already are. Absent:
       * the file is in this version's folder (always so in a folder bundle).
       */
      version: z.number().int().nonnegative().optional(),
    }),
  ),
  /**
   * How the graph was built (gpu-worker/toolrl_learner/export/GRAPH.md). `contrib` graphs (onnxruntime's
   * GroupQueryAttention) take unpadded rows and can share one cache buffer between past and present.
   * Absent in bundles written before the field existed: read as `standard`.
   */
  export: z
    .object({
      variant: z.enum(['standard', 'contrib']),
      /** MatMulNBits block along K; null when not quantised. */
      blockSize: z.number().int().positive().nullable(),
      /** MatMulNBits accuracy_level (4 = int8 activations); null when not quantised. */
      accuracyLevel: z.number().int().min(0).max(4).nullable(),
      opset: z.number().int().positive(),
    })
    .optional(),
});
export type BundleManifest = z.infer<typeof BundleManifestSchema>;
