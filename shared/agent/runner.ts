// Calling the user's agent once per episode: a Python function in the agent's Python host (shared/pyhost, the
// host that runs Python tools and rewards, with its `load_agent` / `run_agent` methods), or a TypeScript /
// JavaScript module's function in this process. Both are called with the same keyword arguments (snake_case, as
// the Python function reads them; a module's function gets them as one object) and both are bounded by the
// episode's time: a Python coroutine is cancelled by the host (a plain function gets an exception raised in its
// thread), a module's function is given an AbortSignal and no longer waited for.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { defaultPython, PythonHost, PythonHostError } from '#shared/pyhost/host';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { AgentConfig } from '#shared/schemas/config/rollout';

/** What every agent is called with. */
export interface AgentKwargs {
  base_url: string;
  model: string;
  messages: ChatMessage[];
  tools: ToolSchema[];
  extra_info: Record<string, unknown>;
  sample_index: number;
  episode_id: string;
  [extra: string]: unknown;
}

/** What the agent returned: its final answer when it gave one as text, and a dict it returned as JSON. */
export interface AgentReturn {
  answer: string | null;
  output: unknown;
}

/** The agent failed (`error`: it threw, or its host died) or ran out of time (`timeout`). */
export class AgentFailure extends Error {
  override name = 'AgentFailure';
  constructor(
    readonly kind: 'error' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/** The agent cannot be loaded at all (no such file or function, an import that fails): a fault of the run's config. */
export class AgentLoadError extends Error {
  override name = 'AgentLoadError';
}

export interface AgentRunner {
  /** Runs one episode's agent; throws AgentFailure when it throws or runs past `timeoutS`. */
  run(kwargs: AgentKwargs, timeoutS: number): Promise<AgentReturn>;
  close(): Promise<void>;
}

/** The agent environment `npm run setup` makes (shared/agent/python/requirements.lock). */
export const AGENT_VENV_PYTHON = fileURLToPath(
  new URL('../../.cache/agent-venv/bin/python', import.meta.url),
);

/** The agent's interpreter: the config's, else TOOLRL_PYTHON, else the agent environment, else python3. */
export function agentPython(configured?: string): string {
  if (configured ?? process.env.TOOLRL_PYTHON) return defaultPython(configured);
  return existsSync(AGENT_VENV_PYTHON) ? AGENT_VENV_PYTHON : defaultPython();
}

const ReturnSchema = z.object({ answer: z.string().nullable(), output: z.unknown() });

/** The run's agent, loaded: `file` is the resolved path of `config.path`. */
export async function loadAgent(config: AgentConfig, file: string, baseDir: string): Promise<AgentRunner> {
  if (!existsSync(file))
    throw new AgentLoadError(`rollout.agent.path: ${config.path}: no such file (${file})`);
  return file.endsWith('.py') ? PythonAgent.load(config, file, baseDir) : ModuleAgent.load(config, file);
}

class PythonAgent implements AgentRunner {
  private constructor(
    private readonly host: PythonHost,
    private readonly key: string,
    private readonly label: string,
  ) {}

  static async load(config: AgentConfig, file: string, baseDir: string): Promise<PythonAgent> {
    // Clients that read the key from the environment (`AsyncOpenAI(base_url=...)`) need one; the endpoint takes any.
    const env = { ...process.env, OPENAI_API_KEY: process.env.OPENAI_API_KEY ?? 'toolrl' };
    const host = new PythonHost({
      label: 'the Python agent host',
      python: agentPython(config.python),
      baseDir,
      env,
    });
    const label = `${config.name} from ${config.path}`;
    try {
      await host.setup('load_agent', { key: 'agent', path: file, name: config.name, label });
    } catch (err) {
      await host.close();
      throw new AgentLoadError(`rollout.agent: ${(err as Error).message}`);
    }
    return new PythonAgent(host, 'agent', label);
  }

  async run(kwargs: AgentKwargs, timeoutS: number): Promise<AgentReturn> {
    const started = Date.now();
    try {
      return ReturnSchema.parse(
        await this.host.request('run_agent', { key: this.key, kwargs }, { timeoutS }),
      );
    } catch (err) {
      if (err instanceof PythonHostError && err.type === 'timeout')
        throw new AgentFailure('timeout', err.message);
      // The host answers nothing past the timeout when the agent blocks its event loop (or the machine is too busy
      // to run the cancellation in the host's grace): it is restarted, and the episode still ran out of time.
      if (err instanceof PythonHostError && err.type === 'host' && Date.now() - started >= timeoutS * 1000)
        throw new AgentFailure(
          'timeout',
          `${this.label} did not return within ${timeoutS}s (${err.message})`,
        );
      throw new AgentFailure('error', (err as Error).message);
    }
  }

  close(): Promise<void> {
    return this.host.close();
  }
}

type AgentFn = (kwargs: AgentKwargs & { signal: AbortSignal }) => unknown;

class ModuleAgent implements AgentRunner {
  private constructor(
    private readonly fn: AgentFn,
    private readonly label: string,
  ) {}

  static async load(config: AgentConfig, file: string): Promise<ModuleAgent> {
    const label = `${config.name} from ${config.path}`;
    let mod: Record<string, unknown>;
    try {
      mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    } catch (err) {
      throw new AgentLoadError(`rollout.agent: importing ${config.path} failed: ${(err as Error).message}`);
    }
    const fn = mod[config.name];
    if (typeof fn !== 'function')
      throw new AgentLoadError(
        `rollout.agent: ${config.path} exports no function ${config.name} (it exports: ${Object.keys(mod).join(', ') || 'nothing'})`,
      );
    return new ModuleAgent(fn as AgentFn, label);
  }

  async run(kwargs: AgentKwargs, timeoutS: number): Promise<AgentReturn> {
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(
          new AgentFailure('timeout', `${this.label} did not return within ${timeoutS}s and was abandoned`),
        );
      }, timeoutS * 1000);
    });
    try {
      const value = await Promise.race([Promise.resolve(this.fn({ ...kwargs, signal: abort.signal })), late]);
      return agentReturn(value);
    } catch (err) {
      if (err instanceof AgentFailure) throw err;
      throw new AgentFailure(
        'error',
        `${this.label} threw ${(err as Error)?.name ?? 'an error'}: ${(err as Error)?.message ?? String(err)}`,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {}
}

/** As the Python host reads a return: text is the answer; an object's `answer` (or `final_answer`) when it is text. */
export function agentReturn(value: unknown): AgentReturn {
  if (value === undefined || value === null) return { answer: null, output: null };
  if (typeof value === 'string') return { answer: value, output: null };
  const output = JSON.parse(JSON.stringify(value)) as unknown;
  const rec = typeof output === 'object' && output !== null ? (output as Record<string, unknown>) : {};
  const answer = ['answer', 'final_answer', 'final_output']
    .map((k) => rec[k])
    .find((v) => typeof v === 'string');
  return { answer: (answer as string | undefined) ?? null, output };
}
