// What `toolrl train` shows while it runs: a progress bar (cli-progress) over learner steps with the policy
// version, reward, rollouts/s, tool calls per trajectory and queue depths; plain lines when stderr is not
// a terminal. Validation results are printed as they land.
import { basename } from 'node:path';
import cliProgress from 'cli-progress';
import type { EvalSummary } from '#shared/pipeline/eval';
import type { LoopStats } from '#shared/policy/decode-loop';
import type { QueueSet } from '#shared/ports/queue-set';
import type { TrainEvent } from './train.ts';

export interface ProgressOptions {
  readonly stream?: NodeJS.WriteStream;
  readonly intervalSec?: number;
  /** Steps the run will take when known up front (--max-steps); otherwise read from the run's plan. */
  readonly maxSteps?: number;
}

const fmt = (x: number | null | undefined, digits = 3): string =>
  x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(digits);

const pct = (x: number | null | undefined): string =>
  x === null || x === undefined ? '-' : `${(100 * x).toFixed(1)}%`;

/**
 * One line per validation summary, the same in `toolrl train`'s start/end lines and `toolrl eval`: accuracy is
 * mean@k over the k samples per prompt, pass@k the share of prompts solved by at least one of them.
 */
export const formatEval = (s: EvalSummary): string => {
  const k = s.samplesPerPrompt ?? 1;
  const pass = s.passAtK === undefined || k === 1 ? '' : `, pass@${k} ${pct(s.passAtK)}`;
  const validity = s.toolCallValidity === undefined ? '' : `, valid calls ${pct(s.toolCallValidity)}`;
  return `v${s.policyVersion}: accuracy ${pct(s.accuracy)} (mean@${k})${pass}, reward ${fmt(s.rewardMean)} ± ${fmt(
    s.rewardStd,
    2,
  )}, tool calls/trajectory ${fmt(s.toolCallsPerTrajectory, 2)}${validity} (${s.prompts} prompts, ${
    s.trajectories
  } trajectories)`;
};

/**
 * Where the rollout engine's time went: prompt and continuation prefills (batch 1), batched decode passes (one token
 * a row) and sampling. The three are wall time on the decoding thread, not CPU time: in an embedded run the learner
 * computes beside them.
 */
export const formatRollouts = (s: LoopStats): string => {
  const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const rate = (tokens: number, ms: number) => (ms > 0 ? `, ${Math.round(tokens / (ms / 1000))}/s` : '');
  const rows = s.decodeSteps > 0 ? `, ${(s.decodeTokens / s.decodeSteps).toFixed(1)} rows a pass` : '';
  return (
    `prefill ${s.prefillTokens} tokens in ${sec(s.prefillMs)}${rate(s.prefillTokens, s.prefillMs)}; ` +
    `decode ${s.decodeTokens} tokens in ${s.decodeSteps} passes, ${sec(s.decodeMs)}${rate(s.decodeTokens, s.decodeMs)}${rows}; ` +
    `sampling ${sec(s.sampleMs)}`
  );
};

export class TrainProgress {
  private readonly stream: NodeJS.WriteStream;
  private bar: cliProgress.SingleBar | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly startedAt = Date.now();
  private trajectories = 0;
  private step = 0;
  private total = 0;
  private version = 0;
  private reward: number | null = null;
  private toolCalls: number | null = null;
  private phase = 'starting the learner';
  /** Groups dropped since the last step, by reason (no_signal, stale): a run that trains nothing says why. */
  private dropped: Record<string, number> = {};
  private depths = '';
  private queues: QueueSet | undefined;

  constructor(private readonly opts: ProgressOptions = {}) {
    this.stream = opts.stream ?? process.stderr;
  }

  private get tty(): boolean {
    return Boolean(this.stream.isTTY);
  }

  onEvent(e: TrainEvent): void {
    switch (e.kind) {
      case 'started':
        this.queues = e.queues;
        this.total = this.opts.maxSteps ?? e.config.trainer.max_steps ?? 0;
        this.print(`${e.resumed ? 'resuming' : 'starting'} run ${e.runId} (outputs in ${e.runDir})`);
        this.begin(e.config.logging.progress_interval_s);
        break;
      case 'running': {
        const planned = e.run.totals.groupsPlanned;
        const batch = e.run.config?.trainer.batch_prompts ?? 1;
        if (!this.total && planned) this.total = Math.ceil(planned / batch);
        break;
      }
      case 'learner':
        if (e.line.type === 'sft')
          // A curriculum stage with its own demonstrations runs SFT mid-run, before its first step.
          this.phase = `${this.step > 0 ? 'stage SFT' : 'SFT warm start'} ${e.line.step}/${e.line.steps}, loss ${fmt(e.line.loss)}`;
        if (e.line.type === 'ready') this.phase = `training from policy v${e.line.policyVersion}`;
        if (e.line.type === 'published') this.version = e.line.version;
        if (e.line.type === 'dropped' && (e.line.reason === 'no_signal' || e.line.reason === 'stale'))
          this.dropped[e.line.reason] = (this.dropped[e.line.reason] ?? 0) + 1;
        if (e.line.type === 'step') {
          this.dropped = {};
          this.phase = 'training';
          this.step = e.line.step;
          this.reward = e.line.metrics.reward_mean ?? null;
          this.toolCalls = e.line.metrics.tool_calls_per_trajectory ?? null;
        }
        if (e.line.type === 'done') this.phase = 'learner done; final validation';
        break;
      case 'invoke':
        if (e.result.function === 'reward') this.trajectories += e.result.records - e.result.failed;
        break;
      case 'eval':
        this.print(`validation ${formatEval(e.summary)}`);
        break;
      case 'selecting':
        this.phase = `choosing the final policy: ${e.versions} validated versions on ${basename(e.data)}`;
        break;
      case 'select':
        this.print(`dev ${formatEval(e.summary)}`);
        break;
    }
    this.render();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.render();
    this.bar?.stop();
    this.bar = undefined;
  }

  private begin(intervalSec: number): void {
    if (this.tty) {
      this.bar = new cliProgress.SingleBar(
        {
          stream: this.stream,
          format:
            'step {value}/{total} |{bar}| v{version} reward {reward} | {rps} traj/s | tools/traj {tools} | queues {queues} | {phase}',
          barsize: 20,
          hideCursor: true,
          clearOnComplete: false,
          fps: 4,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(Math.max(1, this.total), this.step, this.payload());
    }
    const every = (this.opts.intervalSec ?? intervalSec) * 1000;
    this.timer = setInterval(() => void this.tick(), every);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const set = this.queues;
    if (set) {
      const short: Record<string, string> = {
        rollout: 'r',
        'tool-calls': 't',
        reward: 'w',
        'scored-groups': 'g',
      };
      const parts: string[] = [];
      for (const [name, letter] of Object.entries(short)) {
        const d = await set.queues[name as keyof typeof set.queues].depth();
        parts.push(`${letter}${d.visible + d.inFlight}`);
      }
      this.depths = parts.join(' ');
    }
    if (this.tty) this.render();
    else this.print(this.line());
  }

  private payload() {
    const secs = (Date.now() - this.startedAt) / 1000;
    return {
      version: this.version,
      reward: fmt(this.reward),
      rps: (this.trajectories / Math.max(1, secs)).toFixed(2),
      tools: fmt(this.toolCalls, 2),
      queues: this.depths || '-',
      phase: this.phase + this.droppedNote(),
    };
  }

  /** `; 16 groups dropped since step 3 (16 no signal: all rewards of a group equal)`, or nothing. */
  private droppedNote(): string {
    const noSignal = this.dropped.no_signal ?? 0;
    const stale = this.dropped.stale ?? 0;
    if (noSignal + stale === 0) return '';
    const why = [
      ...(noSignal ? [`${noSignal} no signal: all rewards of a group equal`] : []),
      ...(stale ? [`${stale} stale`] : []),
    ].join(', ');
    const since = this.step > 0 ? `since step ${this.step}` : 'before the first step';
    return `; ${noSignal + stale} groups dropped ${since} (${why})`;
  }

  private line(): string {
    const p = this.payload();
    return `step ${this.step}/${this.total || '?'} v${p.version} reward ${p.reward} ${p.rps} traj/s tools/traj ${p.tools} queues ${p.queues} (${p.phase})`;
  }

  private render(): void {
    if (!this.bar) return;
    this.bar.setTotal(Math.max(1, this.total));
    this.bar.update(this.step, this.payload());
  }

  /** A line above the bar (or a plain line without a terminal). */
  print(text: string): void {
    if (this.bar) {
      this.stream.write('\r\x1b[2K');
      this.stream.write(`${text}\n`);
      this.bar.render();
    } else this.stream.write(`${text}\n`);
  }
}
