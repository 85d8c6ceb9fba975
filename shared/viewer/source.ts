// Where `toolrl view` reads a run: an embedded run's folder or an environment's bucket, the same key layout in
// both. The viewer only ever gets the read half of the blob store, so it cannot write to the run.
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { QueueJournal } from '#shared/adapters/embedded/queue-journal';
import type { BlobStore } from '#shared/ports/blob-store';
import { dlqName, keys, QUEUES, type QueueName } from '#shared/topology';

/** The reading half of a BlobStore: all the viewer is handed. */
export type ReadOnlyBlobs = Pick<BlobStore, 'describe' | 'get' | 'head' | 'list' | 'listKeys'> & {
  localPath?(key: string): string;
};

/** Messages in each queue (and its dead-letter queue) now. */
export type QueueDepths = Record<string, number>;

export interface RunSource {
  readonly runId: string;
  readonly blobs: ReadOnlyBlobs;
  /** `file:///…/runs/<id>/` or `s3://bucket/runs/<id>/`. */
  readonly where: string;
  /** The run ids present at this place (the `runs/` prefix), to name them when the asked one is missing. */
  listRuns(): Promise<string[]>;
  /** Current queue depths; undefined where they cannot be read. */
  queueDepths(): Promise<QueueDepths | undefined>;
  /** What the queue numbers count (own queues, or the environment's shared ones). */
  readonly queueNote: string;
}

/** Narrows a store to its reads (a plain object: the store's write methods are not reachable through it). */
export function readOnly(store: BlobStore): ReadOnlyBlobs {
  return {
    describe: store.describe,
    get: (k) => store.get(k),
    head: (k) => store.head(k),
    list: (p) => store.list(p),
    listKeys: (p) => store.listKeys(p),
    ...(store.localPath ? { localPath: (k: string) => store.localPath!(k) } : {}),
  };
}

/** An embedded `toolrl train --workdir DIR` run: its folder, and its queues counted from their journals. */
export function folderSource(workdir: string, runId: string): RunSource {
  const root = resolve(workdir);
  const blobs = readOnly(new FolderBlobStore(root));
  const journals = join(root, keys.runPrefix(runId), 'queues');
  return {
    runId,
    blobs,
    where: `file://${join(root, keys.runPrefix(runId))}`,
    listRuns: async () => {
      try {
        return readdirSync(join(root, 'runs'), { withFileTypes: true })
          .filter((e) => e.isDirectory())
          .map((e) => e.name)
          .sort();
      } catch {
        return [];
      }
    },
    queueDepths: async () => {
      const out: QueueDepths = {};
      for (const q of Object.keys(QUEUES) as QueueName[]) {
        // Read only: QueueJournal.read parses the file and stops at a line cut short by a writer.
        out[q] = QueueJournal.read(join(journals, `${q}.jsonl`)).length;
        out[dlqName(q)] = QueueJournal.read(join(journals, `${dlqName(q)}.jsonl`)).length;
      }
      return out;
    },
    queueNote: "the run's own queues, counted from their journals (messages not yet deleted)",
  };
}

/** A run in an environment's bucket (AWS, or LocalStack with AWS_ENDPOINT_URL). */
export async function bucketSource(env: string, runId: string): Promise<RunSource> {
  const { clientOptions, resolveEnvironment } = await import('#shared/operator/environment');
  const { s3Client } = await import('#shared/adapters/aws/clients');
  const { S3BlobStore } = await import('#shared/adapters/aws/s3-blob-store');
  const { queueDepths } = await import('#shared/operator/run-report');
  const client = clientOptions();
  const resources = await resolveEnvironment(env, client);
  const s3 = s3Client(client);
  const blobs = readOnly(new S3BlobStore(s3, resources.bucket));
  return {
    runId,
    blobs,
    where: `s3://${resources.bucket}/${keys.runPrefix(runId)}`,
    listRuns: async () => {
      // One level of runs/ (a delimiter listing: the port's listKeys would walk every run's every object).
      const { ListObjectsV2Command } = await import('@aws-sdk/client-s3');
      const r = await s3.send(
        new ListObjectsV2Command({
          Bucket: resources.bucket,
          Prefix: 'runs/',
          Delimiter: '/',
          MaxKeys: 1000,
        }),
      );
      return (r.CommonPrefixes ?? [])
        .map((p) => p.Prefix?.split('/')[1] ?? '')
        .filter((id) => id !== '')
        .sort();
    },
    queueDepths: async () => {
      const depths = await queueDepths(resources, client);
      const out: QueueDepths = {};
      for (const [q, d] of Object.entries(depths)) {
        out[q] = d.visible + d.inFlight + d.delayed;
        out[dlqName(q as QueueName)] = d.deadLetters;
      }
      return out;
    },
    queueNote: `environment ${env}'s queues (shared by its runs): visible, in flight and delayed messages`,
  };
}
