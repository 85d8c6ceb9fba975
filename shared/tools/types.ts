// The shape every tool has (an OpenAI function schema plus an execute function) and the one error a
// tool raises to report a failure the model should read.
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolCallRecord, ToolErrorType } from '#shared/schemas/tool-result';

/** What a tool may use while it runs; the registry fills it in. */
export interface ToolContext {
  /** Aborted on timeout or when the caller gives up; long-running tools must stop on it. */
  signal: AbortSignal;
  clock: () => Date;
  /** The tool's `timeout`: what a tool that enforces its own deadline (`ownsTimeout`) holds each call to. */
  timeoutMs: number;
}

/** The text the model reads, with the step reward and metrics a tool may report (verl's execute returns both). */
export interface ToolOutput {
  text: string;
  reward?: number;
  metrics?: Record<string, unknown>;
}

/** The trajectory a stateful tool's calls belong to: its id, the row's extra_info, and its calls so far. */
export interface TrajectoryContext {
  /** Unique per trajectory (run, group, sample): a stateful tool's instance id. */
  id: string;
  extraInfo: Record<string, unknown>;
  history: readonly ToolCallRecord[];
}

export interface Tool {
  readonly schema: ToolSchema;
  /** Arguments are already validated against `schema.function.parameters`. Returns the text the model reads. */
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<string | ToolOutput>;
  /** Releases what the tool holds (workers, in-process servers, running sandboxes). */
  close?(): Promise<void>;
  /**
   * The tool enforces `ctx.timeoutMs` itself (a Python tool: its host cancels the call, and a rebuild of the
   * trajectory's state gets its own time), so the registry does not cut the call off at that deadline.
   */
  readonly ownsTimeout?: boolean;
  /** Tools with per-trajectory state (verl's create/execute/calc_reward/release): this tool bound to one. */
  forTrajectory?(t: TrajectoryContext): Tool;
  /** Ends a trajectory's state: its final reward (verl's calc_reward; null when the tool has none), then release. */
  finishTrajectory?(t: TrajectoryContext, signal?: AbortSignal): Promise<number | null>;
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
