// The S3 event notification as SQS delivers it (one message per object; S3 sends `s3:TestEvent` when a
// notification is configured). Run events and policy events are both this shape.
import { z } from 'zod';

/**
 * One record of an S3 event notification. Object keys arrive URL-encoded (`+` for a space).
 * @example {"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
 *   "eventTime": "2025-01-01T00:00:00.000Z", "eventName": "ObjectCreated:Put",
 *   "s3": {"bucket": {"name": "toolrl-dev-123456789012-us-east-1"},
 *          "object": {"key": "runs/r-1a2b/input/train.parquet", "size": 1024, "eTag": "0123abcd", "sequencer": "0061"}}}
 */
export const S3EventRecordSchema = z.object({
  eventVersion: z.string().optional(),
  eventSource: z.literal('aws:s3'),
  awsRegion: z.string().optional(),
  eventTime: z.string(),
  eventName: z.string(),
  s3: z.object({
    bucket: z.object({ name: z.string() }),
    object: z.object({
      key: z.string().min(1),
      size: z.number().int().nonnegative().optional(),
      eTag: z.string().optional(),
      sequencer: z.string().optional(),
    }),
  }),
});
export type S3EventRecord = z.infer<typeof S3EventRecordSchema>;

/**
 * What S3 sends once when a notification configuration is saved; handlers ignore it.
 * @example {"Service": "Amazon S3", "Event": "s3:TestEvent", "Time": "2025-01-01T00:00:00.000Z",
 *   "Bucket": "toolrl-dev-123456789012-us-east-1", "RequestId": "X", "HostId": "Y"}
 */
export const S3TestEventSchema = z.object({
  Service: z.literal('Amazon S3'),
  Event: z.literal('s3:TestEvent'),
  Time: z.string().optional(),
  Bucket: z.string().optional(),
});

export const S3NotificationSchema = z.union([
  z.object({ Records: z.array(S3EventRecordSchema) }),
  S3TestEventSchema,
]);
export type S3Notification = z.infer<typeof S3NotificationSchema>;

/** The object keys an S3 notification names, decoded (`a+b%2Bc` -> `a b+c`); none for a test event. */
export function notifiedKeys(n: S3Notification): { key: string; eventName: string; eTag?: string }[] {
  if (!('Records' in n)) return [];
  return n.Records.map((r) => ({
    key: decodeS3Key(r.s3.object.key),
    eventName: r.eventName,
    ...(r.s3.object.eTag ? { eTag: r.s3.object.eTag } : {}),
  }));
}

/** S3 notifications URL-encode keys with `+` for spaces (form encoding). */
export const decodeS3Key = (key: string): string => decodeURIComponent(key.replace(/\+/g, ' '));

/** The inverse, as S3 writes keys into notifications (for the embedded emulation). */
export const encodeS3Key = (key: string): string =>
  encodeURIComponent(key).replace(/%2F/g, '/').replace(/%20/g, '+');

/** An S3 ObjectCreated notification for one object, as the embedded runtime emits it. */
export function objectCreatedNotification(
  bucket: string,
  key: string,
  info: { size: number; etag: string },
  now = new Date(),
): S3Notification {
  return {
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        awsRegion: 'local',
        eventTime: now.toISOString(),
        eventName: 'ObjectCreated:Put',
        s3: {
          bucket: { name: bucket },
          object: {
            key: encodeS3Key(key),
            size: info.size,
            eTag: info.etag,
            sequencer: now.getTime().toString(16).toUpperCase(),
          },
        },
      },
    ],
  };
}
