// `tools:` of the run config and the standalone tool-config file, in the seed systems' form:
// `tools: [{kind (or class_name), config, tool_schema}]` with an OpenAI function schema.
import { z } from 'zod';
import { ToolSchemaSchema } from '../chat.ts';

export const ToolSpecSchema = z
  .object({
    /** Built-in kind (`calculator`, `code_interpreter`, `search`, …); `class_name` is accepted as an alias. */
    kind: z.string().min(1).optional(),
    class_name: z.string().min(1).optional(),
    config: z.record(z.string(), z.unknown()).default({}),
    /** Overrides the kind's default schema (name, description, parameters). */
    tool_schema: ToolSchemaSchema.optional(),
  })
  .strict()
  .refine((t) => t.kind !== undefined || t.class_name !== undefined, {
    message: 'a tool needs `kind` (or `class_name`)',
  });
export type ToolSpec = z.infer<typeof ToolSpecSchema>;

/** A tool-config file (YAML or JSON). */
export const ToolConfigFileSchema = z.object({ tools: z.array(ToolSpecSchema) }).strict();
export type ToolConfigFile = z.infer<typeof ToolConfigFileSchema>;

/** In the run config: inline `tools`, a `config_file`, or neither (the defaults). */
export const ToolsConfigSchema = z
  .object({
    config_file: z.string().optional(),
    tools: z.array(ToolSpecSchema).optional(),
  })
  .strict()
  .refine((t) => !(t.config_file && t.tools), { message: 'give either `config_file` or `tools`, not both' });
export type ToolsConfig = z.infer<typeof ToolsConfigSchema>;
