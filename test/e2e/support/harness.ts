// One e2e scenario on LocalStack: a fresh environment deployed from the synthesized CDK template through
// LocalStack's CloudFormation (its own bucket and queues, so scenarios never see each other's messages; the local
// worker finds them by the names the CLI derives), pipeline workers as real processes, and helpers to
// read the bucket and queues while the run goes. A queue is looked at without receiving from it (queue counts,
// LocalStack's message browser): a receive would bump the receive count toward the DLQ and hide the message.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectVersionsCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import type { EnvironmentResources } from '#shared/operator/environment';
import { readJson } from '#shared/pipeline/blob-json';
import { isTransientServiceError } from '#shared/ports/errors';
import { ATTR, type QueueDepth } from '#shared/ports/queue';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { type ScoredGroup, ScoredGroupSchema } from '#shared/schemas/scored-group';
import { keys, type QueueName } from '#shared/topology';
import { REPO_ROOT } from '../../../infra/lib/docker-context.ts';
import { HANG_MS } from '../../helpers/hang.ts';
import { deployTestEnvironment, destroyTestEnvironment } from './environment.ts';
import { localstack } from './localstack.ts';

/**
 * Visibility timeouts for the scenarios: long enough for one handler call on two busy cores, short enough that
 * a message whose worker was killed comes back within the test (the topology's are sized for Lambda).
 */
export const E2E_VISIBILITY_SEC: Partial<Record<QueueName, number>> = {
  'run-events': 60,
  'policy-events': 30,
  rollout: 45,
  'tool-calls': 30,
  reward: 30,
  'scored-groups': 30,
};

/** The learner's own lease on scored-group messages (renewed while it trains; kept short so a kill shows). */
export const LEARNER_VISIBILITY_SEC = 20;

/** A message as LocalStack's browser shows it (no receipt handle: it was not received). */
export interface BrowsedMessage {
  readonly messageId: string;
  readonly body: string;
  readonly receiveCount: number;
  readonly attributes: Readonly<Record<string, string>>;
}

export type WorkerEvent = Record<string, unknown> & { worker: string };

export class Worker {
  private stopped: Promise<number | null>;

  constructor(
    readonly child: ChildProcess,
    readonly logPath: string,
  ) {
    this.stopped = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Every `{"worker": …}` line the process printed so far. */
  events(): WorkerEvent[] {
    const out: WorkerEvent[] = [];
    for (const line of readFileSync(this.logPath, 'utf8').split('\n')) {
      if (!line.startsWith('{"worker"')) continue;
      try {
        out.push(JSON.parse(line) as WorkerEvent);
      } catch {}
    }
    return out;
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Waits for an event; fails at once (with the log's tail) if the process exits first. */
  async waitFor(pred: (e: WorkerEvent) => boolean, what: string, ms = HANG_MS): Promise<WorkerEvent> {
    let found: WorkerEvent | undefined;
    await until(
      () => {
        found = this.events().find(pred);
        if (!found && this.exited)
          throw new Error(`the worker exited while waiting for ${what}:\n${this.tail()}`);
        return found !== undefined;
      },
      what,
      ms,
      () => this.tail(),
    );
    return found!;
  }

  /** The last lines of its log, for failure messages. */
  tail(n = 30): string {
    return readFileSync(this.logPath, 'utf8').split('\n').slice(-n).join('\n');
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    this.child.kill(signal);
    return this.stopped;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    await this.stopped;
    clearTimeout(timer);
  }
}

export class Scenario {
  readonly workers: Worker[] = [];
  readonly blobs: S3BlobStore;
  private readonly learnerPids = new Set<number>();

  private constructor(
    readonly resources: EnvironmentResources,
    readonly dir: string,
  ) {
    this.blobs = new S3BlobStore(s3Client(localstack()), resources.bucket);
  }

  /**
   * A fresh environment `e2e<random>` from the template, with the e2e visibility timeouts, or (`topology`) with the
   * topology's own, as `bash scripts/localstack.sh deploy` makes it for a user (a rollout message is then hidden for
   * 90 minutes after a receive: a test on them fails if a message is ever left to wait one out).
   */
  static async create(visibility: 'e2e' | 'topology' = 'e2e'): Promise<Scenario> {
    const resources = await deployTestEnvironment(
      'e2e',
      visibility === 'e2e' ? E2E_VISIBILITY_SEC : undefined,
    );
    return new Scenario(resources, mkdtempSync(join(tmpdir(), `toolrl-${resources.env}-`)));
  }

  get env(): string {
    return this.resources.env;
  }

  /** The environment the CLI and workers get: LocalStack's endpoint and test credentials. */
  processEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const { endpoint, region } = localstack();
    return {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      AWS_ENDPOINT_URL: endpoint,
      AWS_REGION: region,
      AWS_DEFAULT_REGION: region,
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'test',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'test',
      POWERTOOLS_LOG_LEVEL: 'WARN',
      ...extra,
    };
  }

  /**
   * Starts a pipeline worker process (the five stages on this environment's queues); `env` is added to its
   * environment (e.g. a PYTHONPATH for its Python tool host).
   */
  startWorker(name = `worker${this.workers.length}`, env: NodeJS.ProcessEnv = {}): Worker {
    const dir = join(this.dir, name);
    mkdirSync(join(dir, 'tmp'), { recursive: true });
    const logPath = join(dir, 'worker.log');
    const log = openSync(logPath, 'a');
    const child = spawn(
      process.execPath,
      [
        '--disable-warning=NodeVersionSupportWarning',
        '--import',
        'tsx',
        'shared/operator/local-worker.ts',
        '--env',
        this.env,
        '--state-dir',
        join(this.dir, 'learners'),
        ...['--device', 'cpu', '--visibility', String(LEARNER_VISIBILITY_SEC)].map(
          (a) => `--learner-arg=${a}`,
        ),
      ],
      // Its own TMPDIR: the stages cache policy bundles there, and a killed worker's leftovers stay its own.
      {
        cwd: REPO_ROOT,
        env: this.processEnv({ ...env, TMPDIR: join(dir, 'tmp') }),
        stdio: ['ignore', log, log],
      },
    );
    closeSync(log);
    const w = new Worker(child, logPath);
    this.workers.push(w);
    return w;
  }

  /** The last lines of the workers' and learners' logs, for failure messages. */
  tails(n = 20): string {
    const parts = this.workers.map((w, i) => `--- worker${i}\n${w.tail(n)}`);
    for (const e of this.learnerStarts()) {
      const dir = join(this.dir, 'learners', String(e.runId));
      for (const f of ['learner.err.log', 'learner.out.jsonl']) {
        try {
          parts.push(
            `--- ${e.runId}/${f}\n${readFileSync(join(dir, f), 'utf8').split('\n').slice(-n).join('\n')}`,
          );
        } catch {}
      }
    }
    return parts.join('\n');
  }

  /** Learner processes started by any worker so far (their pids, from the workers' events). */
  learnerStarts(): WorkerEvent[] {
    const starts = this.workers.flatMap((w) => w.events().filter((e) => e.worker === 'learner-started'));
    for (const s of starts) this.learnerPids.add(s.pid as number);
    return starts;
  }

  /** Runs `toolrl ARGS` against this environment; resolves with its exit code and output. */
  toolrl(
    args: string[],
    timeoutMs = HANG_MS,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--disable-warning=NodeVersionSupportWarning', 'bin/toolrl.mjs', ...args],
        { cwd: REPO_ROOT, env: this.processEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`toolrl ${args.join(' ')} took over ${timeoutMs} ms\n${stderr}`));
      }, timeoutMs);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  queue(name: QueueName, dlq = false): SqsQueue {
    const url = dlq ? this.resources.deadLetterQueueUrls[name] : this.resources.queueUrls[name];
    return new SqsQueue(sqsClient(localstack()), url, dlq ? `${name}-dlq` : name);
  }

  /** A queue's counts right now (GetQueueAttributes: nothing is received, so nothing is moved or hidden). */
  depth(name: QueueName, dlq = false): Promise<QueueDepth> {
    return this.queue(name, dlq).depth();
  }

  /**
   * Every message in a queue right now, without receiving it: LocalStack's message browser
   * (`/_aws/sqs/messages`, ReceiveMessage's shape) leaves receive counts and visibility as they are, so a look
   * can neither dead-letter a message nor hide it from a worker. Visible messages only: enough for a DLQ, which
   * nothing receives from. `receiveCount` is the message's count on this queue (0 in a DLQ nobody reads).
   */
  async browse(name: QueueName, dlq = false): Promise<BrowsedMessage[]> {
    const { endpoint, region } = localstack();
    const browser = new SQSClient(awsClientConfig({ endpoint: `${endpoint}/_aws/sqs/messages`, region }));
    try {
      const url = dlq ? this.resources.deadLetterQueueUrls[name] : this.resources.queueUrls[name];
      const r = await browser.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      return (r.Messages ?? []).map((m) => ({
        messageId: m.MessageId ?? '',
        body: m.Body ?? '',
        receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 0),
        attributes: Object.fromEntries(
          Object.entries(m.MessageAttributes ?? {}).flatMap(([k, v]) =>
            v.StringValue !== undefined ? [[k, v.StringValue]] : [],
          ),
        ),
      }));
    } finally {
      browser.destroy();
    }
  }

  /**
   * Fails, with each message's dead-letter reason, unless the queues' dead-letter queues are empty. Read once:
   * nothing receives from a DLQ, so a dead letter that is there stays there.
   */
  async expectNoDeadLetters(names: readonly QueueName[]): Promise<void> {
    const found: string[] = [];
    for (const q of names) {
      const d = await this.depth(q, true);
      if (d.visible + d.inFlight + d.delayed === 0) continue;
      const reasons = (await this.browse(q, true)).map((m) => m.attributes[ATTR.deadLetterReason] ?? m.body);
      found.push(`${q}-dlq: ${JSON.stringify(d)}: ${reasons.join(' | ')}`);
    }
    if (found.length > 0) throw new Error(`dead letters where none were expected:\n${found.join('\n')}`);
  }

  /**
   * Waits until the queues hold nothing, visible, in flight or delayed, in two reads `settleMs` apart (a message
   * a worker still holds is in flight, not gone; SQS's counts are approximate and settle within seconds).
   */
  async expectDrained(names: readonly QueueName[], ms = HANG_MS, settleMs = 2_000): Promise<void> {
    const counts = async () =>
      Promise.all(names.map(async (q) => ({ q, d: await this.depth(q) }))).then((all) =>
        all.filter(({ d }) => d.visible + d.inFlight + d.delayed > 0),
      );
    let left: { q: QueueName; d: QueueDepth }[] = [];
    await until(
      async () => {
        left = await counts();
        if (left.length > 0) return false;
        await new Promise((r) => setTimeout(r, settleMs));
        left = await counts();
        return left.length === 0;
      },
      `queues ${names.join(', ')} to drain`,
      ms,
      () => `${left.map(({ q, d }) => `${q}: ${JSON.stringify(d)}`).join('\n')}\n${this.tails()}`,
    );
  }

  /** Submits a run with `toolrl submit`; returns its id. */
  async submit(run: { configPath: string; datasetPath: string }): Promise<string> {
    const r = await this.toolrl([
      'submit',
      '--env',
      this.env,
      '--config',
      run.configPath,
      '--dataset',
      run.datasetPath,
    ]);
    if (r.code !== 0) throw new Error(`toolrl submit failed (${r.code}):\n${r.stderr}`);
    return r.stdout.trim();
  }

  async runStatus(runId: string): Promise<RunStatus | undefined> {
    return (await readJson(this.blobs, keys.runJson(runId), RunStatusSchema))?.value;
  }

  /** Waits until the run is completed or failed; returns run.json then. Fails at once if no worker is left. */
  async waitForEnd(runId: string, ms = HANG_MS): Promise<RunStatus> {
    let last: RunStatus | undefined;
    await until(
      async () => {
        last = await this.runStatus(runId);
        if (['completed', 'failed'].includes(last?.status ?? '')) return true;
        if (this.workers.length > 0 && this.workers.every((w) => w.exited))
          throw new Error(`every worker exited while run ${runId} was ${last?.status}:\n${this.tails()}`);
        return false;
      },
      `run ${runId} to end`,
      ms,
      () => this.tails(),
    );
    return last!;
  }

  /** The scored group manifests of the run, by group id. */
  async groups(runId: string): Promise<Map<string, ScoredGroup>> {
    const out = new Map<string, ScoredGroup>();
    for (const b of await this.blobs.list(`${keys.runPrefix(runId)}groups/`)) {
      if (!b.key.endsWith('.json')) continue;
      const g = (await readJson(this.blobs, b.key, ScoredGroupSchema))!.value;
      out.set(g.groupId, g);
    }
    return out;
  }

  /** The trainer state of the newest complete checkpoint (the learner's record of the groups it settled). */
  async lastCheckpoint(
    runId: string,
  ): Promise<{ step: number; consumedGroupIds: string[]; droppedGroupIds: string[] }> {
    const markers = (await this.blobs.list(`${keys.runPrefix(runId)}checkpoints/`)).filter((b) =>
      b.key.endsWith('/COMPLETE.json'),
    );
    // step-<S>/ or, for new weights at a step that already had a checkpoint, its revision step-<S>-r<k>/
    const order = (k: string): [number, number] => {
      const m = /step-(\d+)(?:-r(\d+))?\//.exec(k);
      return m ? [Number(m[1]), Number(m[2] ?? 0)] : [-1, -1];
    };
    markers.sort((a, b) => {
      const [sa, ra] = order(a.key);
      const [sb, rb] = order(b.key);
      return sb - sa || rb - ra;
    });
    if (markers.length === 0) throw new Error(`run ${runId} has no complete checkpoint`);
    const marker = JSON.parse(Buffer.from((await this.blobs.get(markers[0]!.key))!).toString('utf8')) as {
      step: number;
      trainerState: { consumed_group_ids: string[]; dropped_group_ids: string[] };
    };
    return {
      step: marker.step,
      consumedGroupIds: marker.trainerState.consumed_group_ids,
      droppedGroupIds: marker.trainerState.dropped_group_ids,
    };
  }

  /** How many versions S3 holds of each key under a prefix (versioning is on: a rewrite shows). */
  async versionCounts(prefix: string): Promise<Map<string, number>> {
    const s3 = s3Client(localstack());
    const counts = new Map<string, number>();
    let keyMarker: string | undefined;
    let versionMarker: string | undefined;
    for (;;) {
      const page = await s3.send(
        new ListObjectVersionsCommand({
          Bucket: this.resources.bucket,
          Prefix: prefix,
          KeyMarker: keyMarker,
          VersionIdMarker: versionMarker,
        }),
      );
      for (const v of page.Versions ?? []) counts.set(v.Key!, (counts.get(v.Key!) ?? 0) + 1);
      if (!page.IsTruncated) return counts;
      keyMarker = page.NextKeyMarker;
      versionMarker = page.NextVersionIdMarker;
    }
  }

  /** Stops every worker and learner it started, deletes the environment and the scratch folder. */
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
    this.learnerStarts();
    for (const pid of this.learnerPids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    await destroyTestEnvironment(this.resources).catch(() => {});
    // TOOLRL_E2E_KEEP=1 keeps the workers' and learners' logs for a look after a failure.
    if (process.env.TOOLRL_E2E_KEEP) process.stderr.write(`e2e: kept ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Polls `cond` until it holds; fails naming `what` (and `context()`, e.g. a log tail) after `ms`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  ms = HANG_MS,
  context?: () => string,
): Promise<void> {
  const end = Date.now() + ms;
  // A look that LocalStack answers late or not at all (a loaded machine) is a look that found nothing yet.
  const look = async () => {
    try {
      return await cond();
    } catch (err) {
      if (isTransientServiceError(err)) return false;
      throw err;
    }
  };
  while (!(await look())) {
    if (Date.now() > end)
      throw new Error(`timed out after ${ms} ms waiting for ${what}${context ? `\n${context()}` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
