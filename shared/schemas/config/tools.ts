// `tools:` of the run config and the standalone tool-config file, in the seed systems' form:
// `tools: [{kind (or class_name), config, tool_schema}]` with an OpenAI function schema.
import { z } from 'zod';
import { ToolSchemaSchema } from '../chat.ts';

export const ToolSpecSchema = z
  .object({
    kind: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Built-in kind (`calculator`, `code_interpreter`, `search`, …), or `module` for a TypeScript tool module.',
      ),
    class_name: z
      .string()
      .min(1)
      .optional()
      .describe(
        "A built-in kind's verl/MindSpeed-RL class name, or any other Python class by dotted path (`my_pkg.tools.MyTool`, importable from the tools' Python environment): run in the Python tool host.",
      ),
    path: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A Python file (relative to the config) holding the tool class `name`: run in the Python tool host.',
      ),
    name: z.string().min(1).optional(),
    module: z
      .string()
      .min(1)
      .optional()
      .describe('With `kind: module`: a .ts/.js module (relative to the config) exporting tool definitions.'),
    config: z.record(z.string(), z.unknown()).default({}),
    tool_schema: ToolSchemaSchema.optional().describe(
      "Overrides the kind's default schema (name, description, parameters); a Python class is given it.",
    ),
  })
  .strict()
  .refine((t) => t.kind !== undefined || t.class_name !== undefined || t.path !== undefined, {
    message:
      'a tool needs `kind`, `class_name` (a built-in or a Python class), or `path` + `name` (a Python file)',
  })
  .refine((t) => (t.path === undefined) === (t.name === undefined), {
    message: 'a Python tool from a file needs both `path` (the .py file) and `name` (the class in it)',
  })
  .refine((t) => t.path === undefined || (t.kind === undefined && t.class_name === undefined), {
    message: '`path` + `name` name a Python class by file: leave out `kind` and `class_name`',
  })
  .refine((t) => (t.kind === 'module') === (t.module !== undefined), {
    message: '`kind: module` needs `module: ./my-tool.ts` (and `module` goes with `kind: module` only)',
  })
  .meta({
    id: 'ToolSpec',
    description:
      'One tool: a built-in kind, a Python class (by dotted path or file), or a TypeScript module, with its config and schema.',
  });
export type ToolSpec = z.infer<typeof ToolSpecSchema>;

/** A tool-config file (YAML or JSON). */
export const ToolConfigFileSchema = z.object({ tools: z.array(ToolSpecSchema) }).strict();
export type ToolConfigFile = z.infer<typeof ToolConfigFileSchema>;

/**
 * The Python tool host (python tools and `tools.python`): the interpreter user tool classes run in (default:
 * TOOLRL_PYTHON, else python3 on the PATH), and how long an idle per-trajectory instance is kept.
 */
export const PythonHostConfigSchema = z
  .object({
    executable: z.string().min(1).optional(),
    instance_ttl: z
      .number()
      .positive()
      .default(900)
      .describe("Seconds an instance may sit idle before it is released (an abandoned trajectory's state)."),
    max_instances: z
      .number()
      .int()
      .positive()
      .default(4096)
      .describe('Instances kept live at most; the least recently used beyond it are released.'),
  })
  .strict()
  .meta({
    id: 'PythonHostConfig',
    description:
      'The Python tool host (python tools and `tools.python`): the interpreter user tool classes run in (default: TOOLRL_PYTHON, else python3 on the PATH), and how long an idle per-trajectory instance is kept.',
  });
export type PythonHostConfig = z.infer<typeof PythonHostConfigSchema>;

/** In the run config: inline `tools`, a `config_file`, or neither (the defaults). */
export const ToolsConfigSchema = z
  .object({
    config_file: z.string().optional(),
    tools: z.array(ToolSpecSchema).optional(),
    python: PythonHostConfigSchema.optional(),
  })
  .strict()
  .refine((t) => !(t.config_file && t.tools), { message: 'give either `config_file` or `tools`, not both' })
  .meta({
    id: 'ToolsConfig',
    description: 'In the run config: inline `tools`, a `config_file`, or neither (the defaults).',
  });
export type ToolsConfig = z.infer<typeof ToolsConfigSchema>;
