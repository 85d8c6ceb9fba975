// The quickstart as the README's LocalStack block runs it, at its own shape: the shipped config (batch 8, G=8, the
// 64-prompt validation set sampled 4 times, deterministic), submitted with `toolrl submit` to an environment with the
// topology's own settings (a rollout message given back would wait 90 minutes), the local worker at its embedded
// concurrency (256 rollouts at once). Fewer steps than the README's run (trainer.max_steps=2) and a shorter warm
// start. The run used to stall after v0, the worker logging the SDK's connection timeouts by the hundred.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '#shared/operator/run-report';
import { readJson } from '#shared/pipeline/blob-json';
import { EvalSummarySchema } from '#shared/pipeline/eval';
import { LearnerStateSchema, LearnerWarmStartSchema } from '#shared/schemas/learner-stdio';
import { keys, QUEUES, type QueueName } from '#shared/topology';
import { Scenario, until } from './support/harness.ts';
import { assertLocalStackUp } from './support/localstack.ts';

let s: Scenario;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create('topology');
});
afterAll(async () => {
  await s?.close();
});

describe('the quickstart on LocalStack', () => {
  it('completes through toolrl submit and the local worker, validating v0 and the last version', async () => {
    // GIVEN the worker on a fresh environment
    const worker = s.startWorker();
    await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');

    // WHEN the shipped quickstart is submitted with two steps and a 100-step warm start
    const submit = await s.toolrl([
      'submit',
      '--env',
      s.env,
      '--config',
      'examples/quickstart/run.yaml',
      'trainer.max_steps=2',
      'trainer.sft.steps=100',
      'trainer.sft.warmup_steps=10',
      'trainer.sft.context_warmup_steps=50',
    ]);
    expect(submit.code, submit.stderr).toBe(0);
    const runId = submit.stdout.trim();

    // THEN it completes, having planned the whole run and trained the two batches max_steps allows
    const final = await s.waitForEnd(runId);
    expect(final.status, final.reason ?? '').toBe('completed');
    expect(final.totals).toMatchObject({ groupsPlanned: 512, valPrompts: 64 });
    const learner = (await readJson(s.blobs, keys.learnerState(runId), LearnerStateSchema))!.value;
    expect(learner.step).toBe(2);
    // deterministic: each step settles one whole batch of 8 (trained, or dropped by filter_groups)
    expect(learner.groupsConsumed + learner.groupsDropped).toBe(16);
    const warm = (await readJson(s.blobs, keys.learnerWarmStart(runId), LearnerWarmStartSchema))!.value;
    expect(warm).toMatchObject({ stage: null, step: 100, steps: 100, done: true });

    // The validation set was sampled in full by v0 and by the last version (64 prompts x 4)
    const summaries = await s.blobs.listKeys(keys.evalSummaries(runId));
    const evals = await Promise.all(
      summaries.map(async (k) => (await readJson(s.blobs, k, EvalSummarySchema))!.value),
    );
    expect(evals.map((e) => e.policyVersion).sort()).toEqual([0, 2]);
    for (const e of evals)
      expect(e).toMatchObject({ prompts: 64, samplesPerPrompt: 4, trajectories: 256, droppedPrompts: 0 });

    // Nothing was dead-lettered, no record was given back, no request waited out its connection timeout
    await s.expectNoDeadLetters(Object.keys(QUEUES) as QueueName[]);
    const log = readFileSync(worker.logPath, 'utf8');
    expect(log).not.toMatch(/did not establish a connection/);
    expect(log).not.toMatch(/record failed; it will be retried/);

    // `toolrl status` tells the run's own truth: 16 of the 512 planned groups under max_steps, its own messages
    const text = await s.toolrl(['status', runId, '--env', s.env]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(
      /^learner {3}step 2\/2 .* groups \d+\/16 trained, \d+ dropped \(max_steps 2; 512 planned\)/m,
    );
    // and once the stages' queues have drained (the feeder issues no batch past max_steps; anything still in
    // scored-groups has no learner of this run left to take it), its counts say exactly that: 0 in the stages'
    // queues, and in scored-groups what the queue holds (the environment has no other run)
    const stageQueues: QueueName[] = ['run-events', 'policy-events', 'rollout', 'tool-calls', 'reward'];
    await s.expectDrained(stageQueues);
    let report: RunReport | undefined;
    await until(
      async () => {
        report = JSON.parse(
          (await s.toolrl(['status', runId, '--env', s.env, '--json'])).stdout,
        ) as RunReport;
        const sg = report.queues['scored-groups'];
        return (
          report.runQueues !== null &&
          (['rollout', 'tool-calls', 'reward'] as const).every((q) => report!.runQueues![q] === 0) &&
          report.runQueues['scored-groups'] === sg.visible + sg.inFlight + sg.delayed
        );
      },
      "the run's queue counts to match its queues",
      undefined,
      () => JSON.stringify({ run: report?.runQueues, env: report?.queues }),
    );
    expect(report!.progress).toMatchObject({ maxSteps: 2, stepsPlanned: 2, groupsToTrain: 16 });
  });
});
