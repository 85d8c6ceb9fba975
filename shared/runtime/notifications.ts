// The embedded emulation of S3 event notifications: a write whose key matches a NOTIFICATIONS rule sends
// S3's event JSON to that rule's queue, exactly as the bucket's notification configuration would on AWS.
import type { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import type { Queue } from '#shared/ports/queue';
import { objectCreatedNotification } from '#shared/schemas/messages/s3-event';
import { NOTIFICATIONS, type QueueName } from '#shared/topology';

export type Notifier = (key: string, info?: { size: number; etag: string }) => Promise<void>;

/** The queue a key notifies, if any rule matches. */
export function notificationTarget(key: string): QueueName | undefined {
  return NOTIFICATIONS.find((r) => key.startsWith(r.prefix) && key.endsWith(r.suffix))?.queue;
}

/** A function that sends the S3 notification of `key` where the rules say (no-op for other keys). */
export function notifier(queues: Readonly<Partial<Record<QueueName, Queue>>>, bucket: string): Notifier {
  return async (key, info = { size: 0, etag: '' }) => {
    const target = notificationTarget(key);
    const q = target ? queues[target] : undefined;
    if (!q) return;
    await q.send(JSON.stringify(objectCreatedNotification(bucket, key, info)));
  };
}

/** Notifies for every write made through the folder store (the pipeline's own writes and uploads). */
export function wireFolderNotifications(
  store: FolderBlobStore,
  notify: Notifier,
  onError: (e: unknown) => void,
): () => void {
  return store.onPut((key, info) => {
    if (notificationTarget(key)) notify(key, { size: info.size, etag: info.etag }).catch(onError);
  });
}
