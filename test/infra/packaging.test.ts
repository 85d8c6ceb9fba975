// What `cdk synth` produces for the functions, run for real: esbuild bundles built here without Docker, and the
// container images' staged build contexts laid out as their Dockerfiles do; each must load its handler and
// answer an empty SQS batch (the code runner: run a program). The Docker build itself happens at deploy (no Docker
// engine is needed here).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { functionEnvSchema } from '#shared/adapters/aws/stage-context';
import { BUILTIN_PROMPTS_DIR } from '#shared/data/prompts/templates';
import { FUNCTIONS, type FunctionName } from '#shared/topology';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { addEnvironment } from '../../infra/lib/toolrl-app.ts';
import { HANG_MS } from '../helpers/hang.ts';
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

/**
 * Imports `dir/<module>` in a fresh Node process and calls its handler with `event` (default: an empty batch) and
 * a context with a minute left.
 */
function invoke(
  dir: string,
  env: Record<string, string>,
  module = 'index.mjs',
  event: unknown = { Records: [] },
): unknown {
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const m = await import('./${module}'); process.stdout.write(JSON.stringify(await m.handler(${JSON.stringify(event)}, { getRemainingTimeInMillis: () => 60000 })));`,
    ],
    { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin', ...env }, encoding: 'utf8', timeout: HANG_MS },
  );
  return JSON.parse(out);
}

let outdir: string;
const scratch: string[] = [];
afterAll(() => {
  for (const dir of [outdir, ...scratch]) if (dir) rmSync(dir, { recursive: true, force: true });
});
/** Every function of the pipeline stack: the stages and the code runner (which runs the tool-call image). */
type Name = FunctionName | 'code-runner';
let assets: { path: string; packaging: string; stage: Name; command?: string[] }[];

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
    Properties: { Description?: string; ImageConfig?: { Command?: string[] } };
    Metadata?: Record<string, string>;
  }>(template.Resources)) {
    const stage = r.Properties.Description?.match(/^toolrl dev (\S+)(?: stage$|: )/)?.[1] as Name | undefined;
    if (r.Type !== 'AWS::Lambda::Function' || !stage) continue;
    assets.push({
      path: join(outdir, r.Metadata!['aws:asset:path']!),
      packaging: stage === 'code-runner' ? 'container-tool-call' : FUNCTIONS[stage].packaging,
      stage,
      command: r.Properties.ImageConfig?.Command,
    });
  }
});

describe('function packaging', () => {
  it('bundles run-starter and feeder with the local esbuild; each bundle answers an empty batch', () => {
    const bundled = assets.filter((a) => a.packaging === 'esbuild');
    expect(bundled.map((a) => a.stage).sort()).toEqual(['feeder', 'run-starter']);
    for (const a of bundled)
      expect(invoke(a.path, stageEnv(a.stage as FunctionName))).toEqual({ batchItemFailures: [] });
  });

  it('ships the built-in prompt templates next to each bundle, where the bundled loader looks', () => {
    // GIVEN the templates `data.prompt_type: toolcall` (and the others) name
    const templates = readdirSync(BUILTIN_PROMPTS_DIR).filter((f) => f.endsWith('.yaml'));
    expect(templates).toContain('toolcall.yaml');
    for (const a of assets.filter((x) => x.packaging === 'esbuild')) {
      // THEN each is copied, byte for byte, beside index.mjs
      expect(readdirSync(a.path).sort()).toEqual(['index.mjs', 'index.mjs.map', ...templates].sort());
      for (const f of templates)
        expect(readFileSync(join(a.path, f), 'utf8')).toBe(
          readFileSync(join(BUILTIN_PROMPTS_DIR, f), 'utf8'),
        );
      // AND the bundle finds its folder from import.meta.url at run time (an ES module bundle keeps it), not from
      // the source folder's path on this machine
      const bundle = readFileSync(join(a.path, 'index.mjs'), 'utf8');
      expect(bundle).toContain('import.meta.url');
      expect(bundle).not.toContain(BUILTIN_PROMPTS_DIR);
    }
  });

  it('stages only the allow-listed build context of each image, never node_modules', () => {
    const images = assets.filter((a) => a.packaging !== 'esbuild');
    expect(images.map((a) => a.stage).sort()).toEqual(['code-runner', 'reward', 'rollout', 'tool-call']);
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

  /** The functions an image serves, by the Dockerfile folder it is built from. */
  const IMAGE_FUNCTIONS = {
    rollout: ['rollout'],
    'tool-call': ['tool-call', 'reward', 'code-runner'],
  } as const;

  it.each(Object.keys(IMAGE_FUNCTIONS) as (keyof typeof IMAGE_FUNCTIONS)[])(
    'lays out the %s image as its Dockerfile does; each function its command names runs its TypeScript handler',
    (image) => {
      const served = IMAGE_FUNCTIONS[image];
      const context = assets.find((a) => a.stage === image)!.path;
      const dockerfile = readFileSync(join(context, 'infra', 'docker', image, 'Dockerfile'), 'utf8');
      expect(dockerfile).toContain(`CMD ["${image}.handler"]`);
      // The final stage's COPY lines: package.json, shared, functions and one copy of the entry per function.
      const task = mkdtempSync(join(tmpdir(), `toolrl-${image}-task-`));
      scratch.push(task);
      for (const m of dockerfile.matchAll(/^COPY (?!--from)(\S+) \$\{LAMBDA_TASK_ROOT\}\/(\S*)$/gm)) {
        const [, src, dest] = m as unknown as [string, string, string];
        cpSync(join(context, src), join(task, dest || src), { recursive: true });
      }
      // The image installs production dependencies; here the repository's stand in for them.
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(task, 'node_modules'));
      expect(readdirSync(task).sort()).toEqual(
        ['functions', 'node_modules', 'package.json', 'shared', ...served.map((f) => `${f}.mjs`)].sort(),
      );
      for (const name of served) {
        // GIVEN the function's command from the template (its ImageConfig), which names the module Lambda loads
        const fn = assets.find((a) => a.stage === name)!;
        expect(fn.path).toBe(context); // one build context, so one image for all of them
        expect(fn.command).toEqual([`${name}.handler`]);
        const module = `${fn.command![0]!.split('.')[0]}.mjs`;
        if (name === 'code-runner') {
          // THEN the runner runs a program: 2**10 = 1024
          expect(
            invoke(task, { PATH: process.env.PATH ?? '/usr/bin' }, module, { code: 'print(2**10)' }),
          ).toMatchObject({
            status: 'Success',
            run_result: { stdout: '1024\n', return_code: 0 },
          });
          continue;
        }
        // THEN a stage answers an empty batch
        expect(invoke(task, stageEnv(name), module)).toEqual({ batchItemFailures: [] });
      }
    },
    120_000,
  );

  it('gives the tool-call image the BFCL environment from the lock, and tells the functions where it is', () => {
    const context = assets.find((a) => a.stage === 'tool-call')!.path;
    const dockerfile = readFileSync(join(context, 'infra', 'docker', 'tool-call', 'Dockerfile'), 'utf8');
    // The lock ensureBfclEnv installs locally is in the context, installed the same way (exact pins, hashes, no deps)
    expect(readFileSync(join(context, 'shared/bfcl/requirements.lock'), 'utf8')).toBe(
      readFileSync(join(REPO_ROOT, 'shared/bfcl/requirements.lock'), 'utf8'),
    );
    expect(dockerfile).toMatch(/^COPY shared\/bfcl\/requirements\.lock (\S+)$/m);
    expect(dockerfile).toMatch(
      /pip --python \/opt\/bfcl-env\/bin\/python install .*--no-deps --require-hashes/,
    );
    // and the interpreter is named, so no function builds .cache/bfcl-env in its read-only code folder at cold start
    expect(dockerfile).toMatch(/^ENV TOOLRL_BFCL_PYTHON=\/opt\/bfcl-env\/bin\/python /m);
    expect(dockerfile).toMatch(/BFCL_PROJECT_ROOT=\/tmp\//);
    expect(existsSync(join(context, 'shared/bfcl/python/toolrl_bfcl/__main__.py'))).toBe(true);
  });

  it('gives the rollout image the agent environment from the lock, and tells the agent host where it is', () => {
    const context = assets.find((a) => a.stage === 'rollout')!.path;
    const dockerfile = readFileSync(join(context, 'infra', 'docker', 'rollout', 'Dockerfile'), 'utf8');
    // The lock `npm run setup` installs as .cache/agent-venv is in the context, installed with its hashes
    expect(readFileSync(join(context, 'shared/agent/python/requirements.lock'), 'utf8')).toBe(
      readFileSync(join(REPO_ROOT, 'shared/agent/python/requirements.lock'), 'utf8'),
    );
    expect(dockerfile).toMatch(/^COPY shared\/agent\/python\/requirements\.lock (\S+)$/m);
    expect(dockerfile).toMatch(/pip --python \/opt\/agent-env\/bin\/python install .*--require-hashes/);
    expect(dockerfile).toMatch(/^ +TOOLRL_PYTHON=\/opt\/agent-env\/bin\/python$/m);
    expect(existsSync(join(context, 'shared/pyhost/python/toolrl_pyhost/agents.py'))).toBe(true);
  });
});
