// The text of each token of a trajectory, from the run's own tokenizer (the one in its policy bundles). A bucket's
// tokenizer files are copied to a temporary folder of this machine, never next to the run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import { keys } from '#shared/topology';
import type { ReadOnlyBlobs } from './source.ts';

const FILES = ['tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja'];

export class RunTokenizer {
  private loading: Promise<ChatTokenizer> | undefined;
  private scratch: string | undefined;

  constructor(
    private readonly blobs: ReadOnlyBlobs,
    private readonly runId: string,
  ) {}

  /** Each token's own text; throws naming what is missing when the run has no readable tokenizer. */
  async pieces(ids: readonly number[]): Promise<string[]> {
    const tok = await this.tokenizer();
    return ids.map((id) => tok.piece(id));
  }

  private tokenizer(): Promise<ChatTokenizer> {
    this.loading ??= this.load().catch((err: unknown) => {
      this.loading = undefined; // a run whose first bundle is still being written: try again next time
      throw err;
    });
    return this.loading;
  }

  private async load(): Promise<ChatTokenizer> {
    // Every version's bundle carries the same tokenizer; the first one listed will do.
    const policy = keys.policyVersion(this.runId, 0).replace(/v0\/$/, '');
    const key = (await this.blobs.listKeys(policy)).find((k) => k.endsWith('/tokenizer.json'));
    if (!key) throw new Error(`no policy bundle with a tokenizer.json under ${policy} yet`);
    const dir = key.slice(0, -'tokenizer.json'.length);
    const local = this.blobs.localPath?.(dir);
    if (local) return ChatTokenizer.load(local);
    this.scratch ??= mkdtempSync(join(tmpdir(), 'toolrl-view-tokenizer-'));
    for (const f of FILES) {
      const body = await this.blobs.get(dir + f);
      if (body) writeFileSync(join(this.scratch, f), body);
    }
    return ChatTokenizer.load(this.scratch);
  }

  close(): void {
    if (this.scratch) rmSync(this.scratch, { recursive: true, force: true });
  }
}
