// The shape every tool has (an OpenAI function schema plus an execute function) and the one error a
// tool raises to report a failure the model should read.
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolErrorType } from '#shared/schemas/tool-result';

/** What a tool may use while it runs; the registry fills it in. */
export interface ToolContext {
  /** Aborted on timeout or when the caller gives up; long-running tools must stop on it. */
  signal: AbortSignal;
  clock: () => Date;
}

export interface Tool {
  readonly schema: ToolSchema;
  /** Arguments are already validated against `schema.function.parameters`. Returns the text the model reads. */
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<string>;
  /** Releases what the tool holds (workers, in-process servers, running sandboxes). */
  close?(): Promise<void>;
}

/**
 * A tool failure the model should see: becomes `{ok: false, error: {type, message}, output}`.
 * `output` keeps what the tool produced before failing (e.g. a traceback on stdout/stderr).
 */
export class ToolFailure extends Error {
  override name = 'ToolFailure';
  constructor(
    readonly type: ToolErrorType,
    message: string,
    readonly output = '',
  ) {
    super(message);
  }
}

/** Process-level facts a tool factory may read (never the raw process environment by default). */
export interface ToolEnv {
  /** Resolves relative paths in tool configs (corpus files, caches). */
  baseDir: string;
  clock: () => Date;
  /**
   * The variables tools may read (secrets.ts): the operator's allow-list (TOOLRL_TOOL_SECRETS, the tool secret's
   * names on AWS) and toolrl's own settings; never `AWS_*`. Read credentials through `readToolSecret`.
   */
  env: Readonly<Record<string, string | undefined>>;
  /** The allow-listed names, so a tool can tell "not allowed" from "not set". */
  allowedSecrets: readonly string[];
}
