// Why the LocalStack worker stalled after v0 (issue 32), in numbers: N long polls on one SQS client whose pool has
// S sockets, and 8 senders on the same client, for 20 s against LocalStack. The SDK's connection timeout (3 s) counts
// the wait for a free socket, so with 256 pollers on the SDK's default 50 sockets the senders' requests fail with
// "the request socket did not establish a connection ... within the configured timeout of 3000 ms". The product's
// clients (AWS_MAX_SOCKETS) and pollers (POLLERS per queue) are the last rows.
//   npx tsx bench/pipeline/sqs-pool.ts [--seconds 20]   (LocalStack at AWS_ENDPOINT_URL, or started on LOCALSTACK_PORT)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { AWS_MAX_SOCKETS, awsClientConfig } from '#shared/adapters/aws/clients';
import { POLLERS } from '#shared/runtime/event-source-mapping';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '20' } } });
const seconds = Number(args.seconds);
process.env.AWS_ENDPOINT_URL ??= `http://127.0.0.1:${process.env.LOCALSTACK_PORT ?? 4566}`;
process.env.AWS_ACCESS_KEY_ID ??= 'test';
process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
const script = join(import.meta.dirname, '../../scripts/localstack.sh');
const running = spawnSync('bash', [script, 'status'], { stdio: 'ignore' }).status === 0;
if (!running && spawnSync('bash', [script, 'start'], { stdio: 'inherit' }).status !== 0)
  throw new Error('LocalStack did not start (bash scripts/localstack.sh start)');

interface Row {
  readonly sockets: number;
  readonly pollers: number;
  readonly receives: number;
  readonly sends: number;
  readonly connectTimeouts: number;
  readonly otherErrors: number;
}

async function measure(sockets: number, pollers: number): Promise<Row> {
  const cfg = awsClientConfig({ endpoint: process.env.AWS_ENDPOINT_URL, region: 'us-east-1' });
  const client = new SQSClient({
    ...cfg,
    useQueueUrlAsEndpoint: false,
    requestHandler: { ...cfg.requestHandler, httpAgent: { maxSockets: sockets } },
  });
  const tag = `${sockets}-${pollers}-${Date.now()}`;
  const { QueueUrl: empty } = await client.send(new CreateQueueCommand({ QueueName: `pool-empty-${tag}` }));
  const { QueueUrl: sink } = await client.send(new CreateQueueCommand({ QueueName: `pool-sink-${tag}` }));
  let on = true;
  let receives = 0;
  let sends = 0;
  let connectTimeouts = 0;
  let otherErrors = 0;
  const note = (e: unknown) => {
    if (/did not establish a connection/.test((e as Error).message)) connectTimeouts++;
    else otherErrors++;
  };
  const poll = async () => {
    while (on)
      await client
        .send(new ReceiveMessageCommand({ QueueUrl: empty, WaitTimeSeconds: 1 }), { requestTimeout: 16_000 })
        .then(() => receives++, note);
  };
  const send = async () => {
    while (on) {
      const t = Date.now();
      await client
        .send(new SendMessageCommand({ QueueUrl: sink, MessageBody: 'x' }))
        .then(() => sends++, note);
      await new Promise((r) => setTimeout(r, Math.max(0, 50 - (Date.now() - t))));
    }
  };
  const all = [...Array.from({ length: pollers }, poll), ...Array.from({ length: 8 }, send)];
  await new Promise((r) => setTimeout(r, seconds * 1000));
  on = false;
  await Promise.all(all);
  for (const q of [empty, sink]) await client.send(new DeleteQueueCommand({ QueueUrl: q }));
  client.destroy();
  return { sockets, pollers, receives, sends, connectTimeouts, otherErrors };
}

const rows: Row[] = [];
for (const [sockets, pollers] of [
  [50, 256],
  [AWS_MAX_SOCKETS, 256],
  [50, POLLERS],
  [AWS_MAX_SOCKETS, POLLERS],
] as const)
  rows.push(await measure(sockets, pollers));
console.log(
  `${seconds} s each; 8 senders (one SendMessage per 50 ms each) beside the pollers (1 s long polls)`,
);
console.log('| sockets | long polls | receives | sends | connection timeouts | other errors |');
console.log('|---|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.sockets} | ${r.pollers} | ${r.receives} | ${r.sends} | ${r.connectTimeouts} | ${r.otherErrors} |`,
  );
if (!running) spawnSync('bash', [script, 'stop'], { stdio: 'inherit' });
process.exit(0);
