// Bad per-environment settings fail synth with a message that names the environment and the field.
import { describe, expect, it } from 'vitest';
import { build } from './app.ts';

type Envs = Record<string, Record<string, unknown>>;

/** An edit of cdk.json's environments setting one dotted path (`dev.learner.vcpus`) to a value. */
function setting(path: string, value: unknown): (envs: Envs) => void {
  return (envs) => {
    const parts = path.split('.');
    let node = envs as Record<string, unknown>;
    for (const p of parts.slice(0, -1)) {
      node[p] ??= {};
      node = node[p] as Record<string, unknown>;
    }
    node[parts.at(-1)!] = value;
  };
}
const buildWith = (path: string, value: unknown) => () => build({ edit: setting(path, value) });

describe('environment settings', () => {
  it('rejects an environment cdk.json does not define, listing the ones it does', () => {
    expect(() => build({ env: 'staging' })).toThrow(
      /unknown environment "staging"; cdk.json defines: dev, prod/,
    );
  });

  it('rejects a learner instance type without an NVIDIA GPU', () => {
    expect(buildWith('dev.learner.instanceTypes', ['g5.xlarge', 'm5.large'])).toThrow(
      /dev\.learner\.instanceTypes\.1: is not an NVIDIA GPU instance type/,
    );
  });

  it('rejects a learner job larger than the compute environment can ever hold', () => {
    expect(buildWith('dev.learner.vcpus', 16)).toThrow(
      /dev\.learner\.vcpus: vcpus exceeds maxvCpus: the job could never be placed/,
    );
  });

  it('rejects learner shapes AWS cannot place: more GPUs than the instance has, multi-node on spot, on two instance types, or without NAT', () => {
    expect(buildWith('dev.learner.gpus', 4)).toThrow(
      /dev\.learner\.instanceTypes: g5\.xlarge has 1 GPU\(s\), fewer than gpus: 4/,
    );
    const multi = (over: Record<string, unknown>) => () =>
      build({
        edit: (envs) => Object.assign(envs.dev!.learner as object, { nodes: 2, maxvCpus: 64, ...over }),
      });
    expect(multi({})).toThrow(/dev\.learner\.nodes: multi-node parallel jobs do not run on Spot capacity/);
    expect(multi({ spot: false, natGateways: 1 })).toThrow(
      /dev\.learner\.instanceTypes: a multi-node job runs on one instance type/,
    );
    expect(multi({ spot: false, instanceTypes: ['g5.xlarge'] })).toThrow(
      /dev\.learner\.natGateways: .*awsvpc/,
    );
    expect(multi({ spot: false, natGateways: 1, instanceTypes: ['g5.xlarge'], maxvCpus: 4 })).toThrow(
      /vcpus x nodes exceeds maxvCpus/,
    );
    expect(multi({ spot: false, natGateways: 1, instanceTypes: ['g5.xlarge'] })).not.toThrow();
  });

  it("rejects a function timeout its queue's visibility timeout cannot cover six times", () => {
    // reward's queue has visibility 6 x 120 s = 720 s, so 121 s is already too long
    expect(buildWith('dev.functions.reward', { timeoutSec: 121 })).toThrow(
      /environment dev: functions\.reward\.timeoutSec=121 needs the reward queue's visibility timeout \(720 s\) to be >= 6 x 121 s/,
    );
    expect(buildWith('dev.functions.reward', { timeoutSec: 120 })).not.toThrow();
  });

  it('rejects Lambda limits: memory above 10240 MB, maximum concurrency below 2, big batches without a window', () => {
    expect(buildWith('dev.functions.rollout', { memoryMb: 12_000 })).toThrow(
      /dev\.functions\.rollout\.memoryMb: Lambda allows at most 10240 MB/,
    );
    expect(buildWith('dev.functions.reward', { maxConcurrency: 1 })).toThrow(
      /dev\.functions\.reward\.maxConcurrency: maxConcurrency must be >= 2/,
    );
    expect(buildWith('dev.functions.feeder', { batchSize: 50, maxBatchingWindowSec: 0 })).toThrow(
      /functions\.feeder\.batchSize=50 above 10 needs maxBatchingWindowSec >= 1/,
    );
  });

  it('rejects a log retention CloudWatch does not offer, an unknown stage and an unknown key', () => {
    expect(buildWith('dev.logRetentionDays', 10)).toThrow(
      /dev\.logRetentionDays: must be one of CloudWatch's retention periods/,
    );
    expect(buildWith('dev.functions.trainer', { memoryMb: 512 })).toThrow(
      /dev\.functions: Unrecognized key: "trainer"/,
    );
    expect(buildWith('dev.learnerSpot', true)).toThrow(/Unrecognized key.*learnerSpot/);
  });
});
