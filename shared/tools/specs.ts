// The tool config entries of a run: inline `tools`, those of a `config_file` (a verl tool-config file; its
// relative paths are then resolved from its own folder), or the defaults.
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import {
  type ToolConfigFile,
  ToolConfigFileSchema,
  type ToolSpec,
  ToolSpecSchema,
  type ToolsConfig,
} from '#shared/schemas/config/tools';
import { parseOrThrow, readConfigFile } from './config.ts';
import { DEFAULT_TOOL_SPECS } from './kinds.ts';

export function toolSpecsAndDir(
  spec: ToolsConfig | ToolConfigFile | undefined,
  baseDir: string,
): { specs: ToolSpec[]; baseDir: string } {
  if (spec && 'config_file' in spec && spec.config_file) {
    const file = isAbsolute(spec.config_file) ? spec.config_file : resolve(baseDir, spec.config_file);
    const specs = parseOrThrow('config_file', ToolConfigFileSchema, readConfigFile(file)).tools;
    return { specs, baseDir: dirname(file) };
  }
  // Inline entries may come from code rather than a parsed config: checked here all the same.
  const specs = spec?.tools ? parseOrThrow('tools', z.array(ToolSpecSchema), spec.tools) : DEFAULT_TOOL_SPECS;
  return { specs, baseDir };
}

export const toolSpecsOf = (spec: ToolsConfig | ToolConfigFile | undefined, baseDir: string): ToolSpec[] =>
  toolSpecsAndDir(spec, baseDir).specs;
