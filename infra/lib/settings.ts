// Per-environment settings (cdk.json context `toolrl:environments`), parsed once so a bad value fails
// synth with a message naming the environment and the field, before any construct is built.

import { z } from 'zod';
import { gpusOf } from '#shared/deployment/gpus';
import { consumedQueue, FUNCTIONS, type FunctionName, QUEUES } from '#shared/topology';

/** The retention periods CloudWatch Logs accepts. */
const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653,
] as const;

/** Instance families with NVIDIA GPUs that Batch's ECS GPU AMI supports. */
const GPU_INSTANCE = /^(g4dn|g5|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\.[0-9a-z]+$/;

const FunctionOverridesSchema = z
  .object({
    memoryMb: z.number().int().min(128).max(10_240, 'Lambda allows at most 10240 MB').optional(),
    /** Must stay <= the consumed queue's visibility timeout / 6 (shared/topology.ts). */
    timeoutSec: z.number().int().min(1).max(900, 'Lambda allows at most 900 s').optional(),
    ephemeralStorageMb: z
      .number()
      .int()
      .min(512)
      .max(10_240, 'Lambda allows 512-10240 MB of /tmp')
      .optional(),
    batchSize: z.number().int().min(1).max(10_000).optional(),
    maxBatchingWindowSec: z.number().int().min(0).max(300).optional(),
    /** Lambda's SQS event source allows 2-1000. */
    maxConcurrency: z
      .number()
      .int()
      .min(2, 'maxConcurrency must be >= 2 (Lambda SQS limit)')
      .max(1000)
      .optional(),
  })
  .strict();
export type FunctionOverrides = z.infer<typeof FunctionOverridesSchema>;

const LearnerSettingsSchema = z
  .object({
    instanceTypes: z
      .array(
        z
          .string()
          .regex(GPU_INSTANCE, 'is not an NVIDIA GPU instance type (g4dn, g5, g6, g6e, p4d, p5, ...)'),
      )
      .min(1),
    /** Spot capacity: cheaper, and a reclaimed host is retried from the last checkpoint. */
    spot: z.boolean(),
    minvCpus: z.number().int().nonnegative().default(0),
    maxvCpus: z.number().int().positive(),
    /** Resources of one learner job (one run). */
    vcpus: z.number().int().positive(),
    memoryMib: z.number().int().min(1024),
    /**
     * GPUs per instance: above 1 the job runs `python -m toolrl_learner launch --nproc-per-node <gpus> sqs`
     * (torchrun, one FSDP2 rank per GPU).
     */
    gpus: z.number().int().positive().max(8),
    /**
     * Instances per learner job: above 1 an AWS Batch multi-node parallel job (gang-scheduled, on-demand only,
     * one instance type, a cluster placement group, all traffic allowed between the learner's hosts).
     */
    nodes: z.number().int().min(1).max(16).default(1),
    /** Attempts in all; only host terminations (spot reclaim, lost host) are retried. */
    attempts: z.number().int().min(1).max(10),
    timeoutHours: z
      .number()
      .positive()
      .max(24 * 14),
    /** 0: public subnets (no NAT cost; instances get public IPs, no inbound rules). */
    natGateways: z.number().int().nonnegative().max(3).default(0),
  })
  .strict()
  .refine((l) => l.vcpus <= l.maxvCpus, {
    message: 'vcpus exceeds maxvCpus: the job could never be placed',
    path: ['vcpus'],
  })
  .refine((l) => l.minvCpus <= l.maxvCpus, { message: 'minvCpus exceeds maxvCpus', path: ['minvCpus'] })
  .refine((l) => l.vcpus * l.nodes <= l.maxvCpus, {
    message: 'vcpus x nodes exceeds maxvCpus: the multi-node job could never be placed',
    path: ['nodes'],
  })
  .refine((l) => l.nodes === 1 || !l.spot, {
    message: 'multi-node parallel jobs do not run on Spot capacity (AWS Batch); set spot: false',
    path: ['nodes'],
  })
  .refine((l) => l.nodes === 1 || l.natGateways > 0, {
    message:
      'a multi-node job runs in awsvpc mode, whose network interfaces get no public IP: set natGateways >= 1',
    path: ['natGateways'],
  })
  .refine((l) => l.nodes === 1 || l.instanceTypes.length === 1, {
    message: 'a multi-node job runs on one instance type: list exactly one in instanceTypes',
    path: ['instanceTypes'],
  })
  .superRefine((l, ctx) => {
    for (const t of l.instanceTypes) {
      const have = gpusOf(t);
      if (have !== undefined && have < l.gpus)
        ctx.addIssue({
          code: 'custom',
          message: `${t} has ${have} GPU(s), fewer than gpus: ${l.gpus}`,
          path: ['instanceTypes'],
        });
    }
  });

export const EnvSettingsSchema = z
  .object({
    /** Pin the environment to an account/region (recommended for prod); otherwise the CLI's profile decides. */
    account: z
      .string()
      .regex(/^\d{12}$/)
      .optional(),
    region: z
      .string()
      .regex(/^[a-z]{2}(-gov)?-[a-z]+-\d$/)
      .optional(),
    logRetentionDays: z.number().refine((d) => (LOG_RETENTION_DAYS as readonly number[]).includes(d), {
      message: `must be one of CloudWatch's retention periods: ${LOG_RETENTION_DAYS.join(', ')}`,
    }),
    /** Scored trajectories and claim-checked messages expire after this many days. */
    trajectoryExpirationDays: z.number().int().positive(),
    /** Overwritten objects (policy LATEST.json, run.json) keep their old versions this long. */
    noncurrentVersionExpirationDays: z.number().int().positive(),
    /** Alarm on any queue whose oldest message is older than this. */
    oldestMessageAgeAlarmSec: z.number().int().min(60),
    /** Alarms notify this address through an SNS topic; null: alarms only show on the dashboard. */
    alarmEmail: z.email().nullable(),
    functions: z
      .partialRecord(z.enum(Object.keys(FUNCTIONS) as [FunctionName]), FunctionOverridesSchema)
      .default({}),
    learner: LearnerSettingsSchema,
  })
  .strict();
export type EnvSettings = z.infer<typeof EnvSettingsSchema>;

/** A function's effective settings: the topology's defaults with the environment's overrides on top. */
export interface ResolvedFunctionSettings {
  memoryMb: number;
  timeoutSec: number;
  ephemeralStorageMb: number;
  batchSize: number;
  maxBatchingWindowSec: number;
  maxConcurrency: number;
}

export function resolveFunctionSettings(
  env: string,
  settings: EnvSettings,
  fn: FunctionName,
): ResolvedFunctionSettings {
  const spec = FUNCTIONS[fn];
  const queue = QUEUES[consumedQueue(fn)];
  const o = settings.functions[fn] ?? {};
  const resolved: ResolvedFunctionSettings = {
    memoryMb: o.memoryMb ?? spec.memoryMb,
    timeoutSec: o.timeoutSec ?? spec.timeoutSec,
    // The rollout stage caches the policy bundle (graph + weights) in /tmp.
    ephemeralStorageMb: o.ephemeralStorageMb ?? (spec.packaging === 'container-rollout' ? 10_240 : 512),
    batchSize: o.batchSize ?? queue.batchSize,
    maxBatchingWindowSec: o.maxBatchingWindowSec ?? queue.maxBatchingWindowSec,
    maxConcurrency: o.maxConcurrency ?? queue.maxConcurrency,
  };
  const where = `environment ${env}: functions.${fn}`;
  if (queue.visibilityTimeoutSec < 6 * resolved.timeoutSec)
    throw new Error(
      `${where}.timeoutSec=${resolved.timeoutSec} needs the ${queue.name} queue's visibility timeout ` +
        `(${queue.visibilityTimeoutSec} s) to be >= 6 x ${resolved.timeoutSec} s; raise it in shared/topology.ts`,
    );
  if (resolved.batchSize > 10 && resolved.maxBatchingWindowSec < 1)
    throw new Error(
      `${where}.batchSize=${resolved.batchSize} above 10 needs maxBatchingWindowSec >= 1 (Lambda SQS rule)`,
    );
  if (resolved.maxConcurrency < 2)
    throw new Error(`${where}.maxConcurrency=${resolved.maxConcurrency} must be >= 2 (Lambda SQS limit)`);
  return resolved;
}

/** Reads and validates one environment's settings from the `toolrl:environments` context value. */
export function parseEnvSettings(env: string, environments: unknown): EnvSettings {
  if (typeof environments !== 'object' || environments === null)
    throw new Error('cdk.json context `toolrl:environments` is missing or not an object');
  const all = environments as Record<string, unknown>;
  if (!(env in all))
    throw new Error(
      `unknown environment ${JSON.stringify(env)}; cdk.json defines: ${Object.keys(all).join(', ')} (pass -c env=NAME)`,
    );
  const parsed = EnvSettingsSchema.safeParse(all[env]);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `  ${[env, ...i.path].join('.')}: ${i.message}`).join('\n');
    throw new Error(`invalid settings for environment ${env} in cdk.json:\n${issues}`);
  }
  for (const fn of Object.keys(FUNCTIONS) as FunctionName[]) resolveFunctionSettings(env, parsed.data, fn);
  return parsed.data;
}
