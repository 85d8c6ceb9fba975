// What `cdk synth` produces for the functions, run for real: esbuild bundles built here without Docker, and the
// container images' staged build contexts laid out as their Dockerfiles do; each must load its handler and
// answer an empty SQS batch. The Docker build itself happens at deploy (no Docker engine is needed here).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionEnvSchema } from '#shared/adapters/aws/stage-context';
import { FUNCTIONS, type FunctionName } from '#shared/topology';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { addEnvironment } from '../../infra/lib/toolrl-app.ts';
import { environments } from './app.ts';

/** Placeholder values for a stage's environment schema (the handlers only parse them at cold start). */
function stageEnv(stage: FunctionName): Record<string, string> {
  const env: Record<string, string> = {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'x',
    AWS_SECRET_ACCESS_KEY: 'x',
  };
  for (const name of Object.keys(functionEnvSchema(stage).shape))
    env[name] = name.includes('URL') ? 'http://127.0.0.1:9/000000000000/q' : 'value';
  return env;
}

/** Imports `dir/index.mjs` in a fresh Node process and calls its handler with an empty batch. */
function invokeEmptyBatch(dir: string, env: Record<string, string>): unknown {
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const m = await import('./index.mjs'); process.stdout.write(JSON.stringify(await m.handler({ Records: [] }, {})));",
    ],
    { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin', ...env }, encoding: 'utf8', timeout: 120_000 },
  );
  return JSON.parse(out);
}

let outdir: string;
const scratch: string[] = [];
afterAll(() => {
  for (const dir of [outdir, ...scratch]) if (dir) rmSync(dir, { recursive: true, force: true });
});
let assets: { path: string; packaging: string; stage: FunctionName }[];

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'toolrl-cdk-out-'));
  const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8'));
  const app = new App({
    outdir,
    context: {
      ...cdkJson.context,
      'toolrl:environments': environments(),
      'aws:cdk:enable-asset-metadata': true,
    },
  });
  addEnvironment(app, 'dev', {
    testOverrides: {
      learnerImage: ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/python:3.11-slim'),
    },
  });
  app.synth();
  // Map each function's asset back to its stage through the template's asset metadata.
  const template = JSON.parse(readFileSync(join(outdir, 'toolrl-dev-pipeline.template.json'), 'utf8'));
  assets = [];
  for (const r of Object.values<{
    Type: string;
    Properties: { Description?: string };
    Metadata?: Record<string, string>;
  }>(template.Resources)) {
    const stage = r.Properties.Description?.match(/^toolrl dev (\S+) stage$/)?.[1] as
      | FunctionName
      | undefined;
    if (r.Type !== 'AWS::Lambda::Function' || !stage) continue;
    assets.push({
      path: join(outdir, r.Metadata!['aws:asset:path']!),
      packaging: FUNCTIONS[stage].packaging,
      stage,
    });
  }
}, 300_000);

describe('function packaging', () => {
  it('bundles run-starter, feeder and reward with the local esbuild; each bundle answers an empty batch', () => {
    const bundled = assets.filter((a) => a.packaging === 'esbuild');
    expect(bundled.map((a) => a.stage).sort()).toEqual(['feeder', 'reward', 'run-starter']);
    for (const a of bundled) {
      expect(readdirSync(a.path).sort()).toEqual(['index.mjs', 'index.mjs.map']);
      expect(invokeEmptyBatch(a.path, stageEnv(a.stage))).toEqual({ batchItemFailures: [] });
    }
  }, 120_000);

  it('stages only the allow-listed build context of each image, never node_modules', () => {
    const images = assets.filter((a) => a.packaging !== 'esbuild');
    expect(images.map((a) => a.stage).sort()).toEqual(['rollout', 'tool-call']);
    for (const a of images) {
      expect(readdirSync(a.path).sort()).toEqual([
        '.npmrc',
        'functions',
        'infra',
        'package-lock.json',
        'package.json',
        'shared',
      ]);
      expect(readdirSync(join(a.path, 'infra', 'docker')).sort()).toEqual(
        ['lambda-handler.mjs', 'prune-node-modules.mjs', 'rollout', 'tool-call'].sort(),
      );
      expect(existsSync(join(a.path, 'node_modules'))).toBe(false);
      expect(existsSync(join(a.path, 'shared', 'node_modules'))).toBe(false);
    }
  });

  it.each(['rollout', 'tool-call'] as const)(
    'lays out the %s image as its Dockerfile does; the Lambda entry runs the TypeScript handler',
    (stage) => {
      const context = assets.find((a) => a.stage === stage)!.path;
      const dockerfile = readFileSync(join(context, 'infra', 'docker', stage, 'Dockerfile'), 'utf8');
      expect(dockerfile).toContain(`TOOLRL_STAGE=${stage}`);
      // The final stage's COPY lines: package.json, shared, functions and the entry as index.mjs.
      const task = mkdtempSync(join(tmpdir(), `toolrl-${stage}-task-`));
      scratch.push(task);
      for (const m of dockerfile.matchAll(/^COPY (?!--from)(\S+) \$\{LAMBDA_TASK_ROOT\}\/(\S*)$/gm)) {
        const [, src, dest] = m as unknown as [string, string, string];
        cpSync(join(context, src), join(task, dest || src), { recursive: true });
      }
      // The image installs production dependencies; here the repository's stand in for them.
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(task, 'node_modules'));
      expect(readdirSync(task).sort()).toEqual([
        'functions',
        'index.mjs',
        'node_modules',
        'package.json',
        'shared',
      ]);
      expect(invokeEmptyBatch(task, { ...stageEnv(stage), TOOLRL_STAGE: stage })).toEqual({
        batchItemFailures: [],
      });
    },
    120_000,
  );
});
