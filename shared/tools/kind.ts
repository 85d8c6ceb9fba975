// A tool kind: what `kind:` (or `class_name:`) in a tool config names, and how it builds its tools.
import type { z } from 'zod';
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolCallRecord } from '#shared/schemas/tool-result';
import type { LimitDefaults, ToolLimits } from './config.ts';
import type { Tool, ToolEnv } from './types.ts';

/** Per-row context for tools a dataset row brings (ToolBench rows carry their own API list). */
export interface RowTools {
  tools?: ToolSchema[];
  /** ToolBench category of the row's APIs (from `extra_info.category`). */
  category?: string;
  /** The row's extra_info, for tools whose environment the row describes (BFCL's initial_config). */
  extraInfo?: Record<string, unknown>;
  /** The trajectory's calls so far with their results, in order: environments rebuilt by replay read them. */
  history?: readonly ToolCallRecord[];
  /** The trajectory's id (run, group, sample): tools with per-trajectory state (Python tools) key it by this. */
  trajectoryId?: string;
}

export interface BuiltTools {
  tools: Tool[];
  /** Builds a tool for a schema a dataset row brings; only kinds that serve row tools have it. */
  rowTool?: (schema: ToolSchema, row: RowTools) => Tool;
}

export interface ToolKind<S extends z.ZodObject = z.ZodObject> {
  /** The name `kind:` takes (other systems' class names for it are translated by shared/config). */
  kind: string;
  defaults: LimitDefaults;
  /** The tool's own config keys (snake_case), parsed strictly. */
  config: S;
  /** The time limit the tool enforces itself (seconds), which the registry's timeout then covers. */
  ownTimeout?: (options: z.infer<S>) => number | undefined;
  build(options: z.infer<S>, ctx: { env: ToolEnv; limits: ToolLimits }): Promise<BuiltTools> | BuiltTools;
}

export const defineToolKind = <S extends z.ZodObject>(k: ToolKind<S>): ToolKind<S> => k;
