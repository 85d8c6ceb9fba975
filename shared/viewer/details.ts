// What opening something reads: a group (its manifest, or the samples scored so far when it has none), one
// trajectory with its tokens' text, a validation question across versions, and the dead letters. Each reads the
// few files it needs; recently opened groups stay parsed for the next click.
import { LRUCache } from 'lru-cache';
import { summariseDeadLetters } from '#shared/pipeline/dead-letters';
import { valGroupVersion } from '#shared/schemas/messages/group-ref';
import type { ScoredGroup } from '#shared/schemas/scored-group';
import { type Trajectory, TrajectorySchema } from '#shared/schemas/trajectory';
import { keys, parseKey } from '#shared/topology';
import type {
  DeadLetterView,
  GroupDetail,
  GroupSample,
  Problem,
  TrajectoryDetail,
  ValidationCompare,
  ValidationOverview,
  ValidationPrompt,
} from './api.ts';
import { promptText } from './conversation.ts';
import type { RunView } from './run-view.ts';
import { safeJson } from './run-view.ts';
import { CorruptGroup, parseGroup, versionRange } from './trajectory-index.ts';

export class NotFound extends Error {
  override name = 'NotFound';
}

interface LoadedGroup {
  readonly head: Omit<ScoredGroup, 'trajectories'> | undefined;
  readonly trajectories: readonly Trajectory[];
  readonly source: GroupDetail['source'];
  readonly problems: readonly Problem[];
}

export class RunDetails {
  private readonly cache = new LRUCache<string, LoadedGroup>({ max: 32 });

  constructor(private readonly view: RunView) {}

  private async load(groupId: string): Promise<LoadedGroup> {
    const hit = this.cache.get(groupId);
    if (hit) return hit;
    const { blobs, runId } = this.view.source;
    const key = keys.group(runId, groupId);
    const body = await blobs.get(key);
    let loaded: LoadedGroup;
    if (body) {
      try {
        const { trajectories, ...head } = parseGroup(key, body);
        loaded = { head, trajectories, source: 'manifest', problems: [] };
      } catch (err) {
        if (!(err instanceof CorruptGroup)) throw err;
        loaded = await this.samples(groupId, [{ key, message: `group manifest unreadable: ${err.message}` }]);
      }
    } else loaded = await this.samples(groupId, []);
    // A group without its manifest may still be scoring: keep only complete ones.
    if (loaded.source === 'manifest') this.cache.set(groupId, loaded);
    return loaded;
  }

  /** The samples scored so far (trajectories/<groupId>/<i>.json), when the group has no readable manifest. */
  private async samples(groupId: string, problems: Problem[]): Promise<LoadedGroup> {
    const { blobs, runId } = this.view.source;
    const trajectories: Trajectory[] = [];
    for (const key of await blobs.listKeys(keys.trajectoryPrefix(runId, groupId))) {
      if (!parseKey('trajectory', key)) continue;
      const body = await blobs.get(key);
      if (!body) continue;
      const r = safeJson(key, body, TrajectorySchema);
      if ('message' in r) problems.push({ key, message: `trajectory unreadable: ${r.message}` });
      else trajectories.push(r.value);
    }
    trajectories.sort((a, b) => a.sampleIndex - b.sampleIndex);
    return { head: undefined, trajectories, source: trajectories.length ? 'trajectories' : 'none', problems };
  }

  async group(groupId: string): Promise<GroupDetail> {
    const g = await this.load(groupId);
    const dead = this.view.deadLetters.filter((d) => d.groupId === groupId);
    if (g.source === 'none' && dead.length === 0 && g.problems.length === 0)
      throw new NotFound(`no group ${groupId} in this run (no manifest, no scored sample, no dead letter)`);
    const split = g.head?.split ?? dead[0]?.split ?? (groupId.startsWith('val-') ? 'val' : 'train');
    const stage = g.head?.stage ?? null;
    const rewards = g.trajectories.map((t) => t.reward);
    const adv =
      g.source === 'manifest'
        ? this.view.advantagesOf(split, stage, rewards)
        : {
            advantages: null,
            note: 'the group is incomplete (no manifest): advantages need all its samples',
          };
    const samples: GroupSample[] = g.trajectories.map((t, i) => ({
      sampleIndex: t.sampleIndex,
      reward: t.reward,
      rewardComponents: t.rewardComponents,
      advantage: adv.advantages?.[i] ?? null,
      finishReason: t.finishReason,
      versions: versionRange(t),
      toolCalls: t.turns.flatMap((u) =>
        u.toolCalls.map((c) => ({
          name: c.name,
          arguments: c.arguments,
          ok: c.result.ok,
          output: c.result.output,
          error: c.result.error ? `${c.result.error.type}: ${c.result.error.message}` : null,
        })),
      ),
      answer: t.turns.at(-1)?.text ?? '',
    }));
    return {
      groupId,
      split,
      promptId: g.head?.promptId ?? null,
      prompt: g.trajectories[0] ? promptText(g.trajectories[0]) : '',
      dataSource: g.head?.dataSource ?? null,
      stage,
      step: this.view.index.stepOf.get(groupId) ?? null,
      source: g.source,
      advantageNote: adv.note,
      samples,
      deadLetters: dead,
      problems: g.problems,
    };
  }

  async trajectory(groupId: string, sampleIndex: number): Promise<TrajectoryDetail> {
    const g = await this.load(groupId);
    const i = g.trajectories.findIndex((t) => t.sampleIndex === sampleIndex);
    const t = g.trajectories[i];
    if (!t) throw new NotFound(`group ${groupId} has no scored sample ${sampleIndex}`);
    const split = g.head?.split ?? (groupId.startsWith('val-') ? 'val' : 'train');
    const stage = g.head?.stage ?? null;
    const adv =
      g.source === 'manifest'
        ? this.view.advantagesOf(
            split,
            stage,
            g.trajectories.map((x) => x.reward),
          ).advantages
        : null;
    let pieces: string[] | null = null;
    let tokenProblem: string | null = null;
    try {
      pieces = await this.view.tokens.pieces(t.tokenIds);
    } catch (err) {
      tokenProblem = `token text unavailable: ${(err as Error).message}`;
    }
    return {
      groupId,
      split,
      promptId: g.head?.promptId ?? '',
      dataSource: g.head?.dataSource ?? '',
      stage,
      step: this.view.index.stepOf.get(groupId) ?? null,
      groupSize: g.trajectories.length,
      trajectory: t,
      advantage: adv?.[i] ?? null,
      pieces,
      tokenProblem,
    };
  }

  /** Each validation prompt's mean reward and accuracy under every version that evaluated it. */
  validation(): ValidationOverview {
    const accuracyComponent = this.view.evals.at(-1)?.accuracyComponent ?? null;
    const prompts = new Map<
      string,
      ValidationPrompt & { byVersion: Record<string, ValidationPrompt['byVersion'][string]> }
    >();
    const versions = new Set<number>();
    for (const g of this.view.index.allGroups()) {
      if (g.split !== 'val') continue;
      const version = valGroupVersion(g.groupId);
      if (version === undefined) continue;
      versions.add(version);
      let p = prompts.get(g.promptId);
      if (!p) {
        p = { promptId: g.promptId, question: g.prompt, dataSource: g.dataSource, byVersion: {} };
        prompts.set(g.promptId, p);
      }
      const n = Math.max(1, g.rows.length);
      p.byVersion[version] = {
        reward: g.rows.reduce((a, r) => a + r.reward, 0) / n,
        accuracy:
          accuracyComponent === null
            ? null
            : g.rows.reduce((a, r) => a + (r.components[accuracyComponent] ?? 0), 0) / n,
        groupId: g.groupId,
      };
    }
    return {
      versions: [...versions].sort((a, b) => a - b),
      accuracyComponent,
      prompts: [...prompts.values()].sort((a, b) => naturalCompare(a.promptId, b.promptId)),
    };
  }

  /** One validation prompt under every version: its groups side by side. */
  async compare(promptId: string): Promise<ValidationCompare> {
    const overview = this.validation();
    const p = overview.prompts.find((x) => x.promptId === promptId);
    if (!p) throw new NotFound(`no validation prompt ${promptId} in this run`);
    const versions = Object.entries(p.byVersion)
      .map(([v, x]) => ({ version: Number(v), groupId: x.groupId }))
      .sort((a, b) => a.version - b.version);
    const groups = await Promise.all(versions.map((v) => this.group(v.groupId)));
    return {
      promptId,
      question: p.question,
      accuracyComponent: overview.accuracyComponent,
      versions: versions.map((v, i) => ({ version: v.version, group: groups[i]! })),
    };
  }

  deadLetters(): DeadLetterView {
    const summary = summariseDeadLetters(this.view.deadLetters);
    return {
      records: this.view.deadLetters.map((d) => ({
        ...d,
        groupScored: this.view.index.group(d.groupId) !== undefined,
      })),
      byStage: summary.stages as DeadLetterView['byStage'],
      problems: this.view.info().problems.filter((p) => p.key.includes('/dead-letters/')),
    };
  }
}

/** `val-p2` before `val-p10`. */
function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
