// The run's trajectories as small rows for the table: each group manifest (written once, never changed) is read
// once, its G trajectories summarised, and the manifest dropped from memory. A refresh lists the groups folder and
// reads only the new manifests, so a live run costs a listing per refresh. Queries filter, sort and page these
// rows; a trajectory's full record is read again, from its one group file, only when it is opened.

import type { z } from 'zod';
import { type ScoredGroup, ScoredGroupSchema } from '#shared/schemas/scored-group';
import type { Trajectory } from '#shared/schemas/trajectory';
import { keys, parseKey } from '#shared/topology';
import type { Problem, TrajectoryPage, TrajectoryRow } from './api.ts';
import { promptText } from './conversation.ts';
import type { ReadOnlyBlobs } from './source.ts';

/** Manifests read at once (S3 answers each in tens of milliseconds; the folder store in microseconds). */
const READ_CONCURRENCY = 16;

/** A table row as kept in memory: without its step (looked up per query) and with its reward components. */
export type IndexedRow = Omit<TrajectoryRow, 'step'> & {
  readonly components: Readonly<Record<string, number>>;
};

export type GroupMeta = Omit<ScoredGroup, 'trajectories'> & {
  readonly key: string;
  readonly prompt: string;
  readonly rows: readonly IndexedRow[];
};

export interface TrajectoryQuery {
  split?: 'train' | 'val';
  /** `12` or `10-20` (inclusive). */
  step?: string;
  /** A version any turn was sampled by: `3` or `2-5`. */
  version?: string;
  /** Case-insensitive text in the prompt, its id or the group id. */
  prompt?: string;
  minReward?: number;
  maxReward?: number;
  finish?: string;
  /** true: only trajectories with a failed or malformed tool call; false: only those without. */
  failed?: boolean;
  groupId?: string;
  sort?: 'step' | 'reward' | 'version' | 'group' | 'toolCalls';
  desc?: boolean;
  offset?: number;
  limit?: number;
}

export const MAX_PAGE = 200;

export function versionRange(t: Pick<Trajectory, 'turns'>): [number, number] | null {
  if (t.turns.length === 0) return null;
  const vs = t.turns.map((u) => u.policyVersion);
  return [Math.min(...vs), Math.max(...vs)];
}

export function failedCalls(t: Pick<Trajectory, 'turns'>): number {
  return t.turns.reduce(
    (n, u) => n + u.parseErrors.length + u.toolCalls.filter((c) => !c.result.ok).length,
    0,
  );
}

function summarise(g: ScoredGroup, key: string): GroupMeta {
  const { trajectories, ...head } = g;
  const prompt = trajectories[0] ? promptText(trajectories[0]) : '';
  const short = prompt.length > 240 ? `${prompt.slice(0, 240)}…` : prompt; // one string for the G rows
  const rows = trajectories.map((t) => ({
    groupId: g.groupId,
    sampleIndex: t.sampleIndex,
    split: g.split,
    promptId: g.promptId,
    prompt: short,
    dataSource: g.dataSource,
    stage: g.stage,
    versions: versionRange(t),
    reward: t.reward,
    finishReason: t.finishReason,
    turns: t.turns.length,
    toolCalls: t.turns.reduce((n, u) => n + u.toolCalls.length, 0),
    failedToolCalls: failedCalls(t),
    responseTokens: t.lossMask.reduce<number>((n, m) => n + m, 0),
    components: t.rewardComponents,
  }));
  return { ...head, key, prompt, rows };
}

/** Parses a group manifest; a CorruptGroup names what is wrong with it. */
export function parseGroup(key: string, body: Uint8Array): ScoredGroup {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch (err) {
    throw new CorruptGroup(`not JSON (${(err as Error).message})`);
  }
  const r = ScoredGroupSchema.safeParse(json);
  if (!r.success) throw new CorruptGroup(issuesText(r.error));
  if (parseKey('group', key)?.groupId !== r.data.groupId)
    throw new CorruptGroup(`its groupId ${r.data.groupId} is not the one its key names`);
  return r.data;
}

/** A schema error in a line: the first few fields at fault and what is wrong with each. */
export function issuesText(error: z.ZodError): string {
  const shown = error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(the object)'}: ${i.message}`);
  const more = error.issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? ` (and ${more} more)` : '');
}

export class CorruptGroup extends Error {
  override name = 'CorruptGroup';
}

function range(spec: string | undefined): [number, number] | undefined {
  if (spec === undefined || spec.trim() === '') return undefined;
  const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(spec);
  if (!m) throw new RangeError(`"${spec}" is neither a number nor a range like 10-20`);
  const lo = Number(m[1]);
  return [lo, m[2] === undefined ? lo : Number(m[2])];
}

export class TrajectoryIndex {
  private readonly groups = new Map<string, GroupMeta>();
  private readonly bad = new Map<string, Problem>();
  private listed = 0;
  private refreshing: Promise<void> | undefined;
  /** Which step trained each group (metrics/batches.jsonl); set by the server on each refresh. */
  stepOf: ReadonlyMap<string, number> = new Map();

  constructor(
    private readonly blobs: ReadOnlyBlobs,
    private readonly runId: string,
  ) {}

  get problems(): Problem[] {
    return [...this.bad.values()];
  }

  get progress(): { listed: number; read: number } {
    return { listed: this.listed, read: this.groups.size + this.bad.size };
  }

  get trajectoryCount(): number {
    let n = 0;
    for (const g of this.groups.values()) n += g.rows.length;
    return n;
  }

  get groupCount(): number {
    return this.groups.size;
  }

  get trainGroupCount(): number {
    let n = 0;
    for (const g of this.groups.values()) if (g.split === 'train') n++;
    return n;
  }

  group(groupId: string): GroupMeta | undefined {
    return this.groups.get(groupId);
  }

  allGroups(): IterableIterator<GroupMeta> {
    return this.groups.values();
  }

  /** Lists the groups folder and reads the manifests not read yet; one refresh at a time (callers share it). */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    const listed = await this.blobs.listKeys(keys.groups(this.runId));
    const fresh = listed.filter((k) => k.endsWith('.json') && !this.bad.has(k) && !this.known(k));
    this.listed = listed.length;
    let next = 0;
    const worker = async () => {
      while (next < fresh.length) {
        const key = fresh[next++]!;
        try {
          const body = await this.blobs.get(key);
          if (!body) continue; // deleted between the listing and the read
          const g = summarise(parseGroup(key, body), key);
          this.groups.set(g.groupId, g);
        } catch (err) {
          if (!(err instanceof CorruptGroup)) throw err;
          this.bad.set(key, { key, message: `group manifest unreadable: ${err.message}` });
        }
      }
    };
    await Promise.all(Array.from({ length: READ_CONCURRENCY }, worker));
  }

  private known(key: string): boolean {
    const id = parseKey('group', key)?.groupId;
    return id !== undefined && this.groups.has(id);
  }

  /** The rows a query selects, sorted, one page of them. */
  query(q: TrajectoryQuery): TrajectoryPage {
    const steps = range(q.step);
    const versions = range(q.version);
    const needle = q.prompt?.trim().toLowerCase() || undefined;
    const selected: TrajectoryRow[] = [];
    const finishReasons = new Set<string>();
    const versionSet = new Set<number>();
    let stepLo = Number.POSITIVE_INFINITY;
    let stepHi = Number.NEGATIVE_INFINITY;
    for (const g of this.groups.values()) {
      const step = this.stepOf.get(g.groupId) ?? null;
      if (step !== null) {
        stepLo = Math.min(stepLo, step);
        stepHi = Math.max(stepHi, step);
      }
      for (const r of g.rows) {
        finishReasons.add(r.finishReason);
        if (r.versions) for (let v = r.versions[0]; v <= r.versions[1]; v++) versionSet.add(v);
      }
      if (q.split && g.split !== q.split) continue;
      if (q.groupId && g.groupId !== q.groupId) continue;
      if (steps && (step === null || step < steps[0] || step > steps[1])) continue;
      if (
        needle &&
        !g.prompt.toLowerCase().includes(needle) &&
        !g.promptId.toLowerCase().includes(needle) &&
        !g.groupId.toLowerCase().includes(needle)
      )
        continue;
      for (const r of g.rows) {
        if (versions && (!r.versions || r.versions[1] < versions[0] || r.versions[0] > versions[1])) continue;
        if (q.minReward !== undefined && r.reward < q.minReward) continue;
        if (q.maxReward !== undefined && r.reward > q.maxReward) continue;
        if (q.finish && r.finishReason !== q.finish) continue;
        if (q.failed !== undefined && r.failedToolCalls > 0 !== q.failed) continue;
        const { components: _, ...row } = r;
        selected.push({ ...row, step });
      }
    }
    const dir = q.desc ? -1 : 1;
    const key = q.sort ?? 'step';
    const value = (r: TrajectoryRow): number | string =>
      key === 'reward'
        ? r.reward
        : key === 'version'
          ? (r.versions?.[0] ?? -1)
          : key === 'toolCalls'
            ? r.toolCalls
            : key === 'group'
              ? r.groupId
              : (r.step ?? Number.POSITIVE_INFINITY);
    selected.sort((a, b) => {
      const x = value(a);
      const y = value(b);
      if (x !== y) return (x < y ? -1 : 1) * dir;
      return a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : a.sampleIndex - b.sampleIndex;
    });
    const offset = Math.max(0, q.offset ?? 0);
    const limit = Math.min(MAX_PAGE, Math.max(1, q.limit ?? 50));
    return {
      total: selected.length,
      offset,
      rows: selected.slice(offset, offset + limit),
      facets: {
        finishReasons: [...finishReasons].sort(),
        versions: [...versionSet].sort((a, b) => a - b),
        steps: Number.isFinite(stepLo) ? [stepLo, stepHi] : null,
      },
    };
  }
}
