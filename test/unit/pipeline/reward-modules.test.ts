// The trust model of `reward.modules` as docs/security.md writes it ("Who can do what"): a module is
// code, imported by the reward stage only (not by `submit`'s checks, not by the run-starter), from the run's own
// upload on a stage, running unsandboxed with the stage's environment; one that throws or never answers fails
// its call with the reason instead of holding the stage.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { writeDataset } from '#shared/data/dataset';
import { inputBytes, prepareInputs } from '#shared/pipeline/run-inputs';
import { RunResources } from '#shared/pipeline/run-resources';
import { readRunStatus } from '#shared/pipeline/run-status';
import { startRunFromUpload } from '#shared/pipeline/stages/run-starter';
import type { BlobStore } from '#shared/ports/blob-store';
import { silentLog } from '#shared/ports/log';
import { buildReward } from '#shared/rewards/index';
import { keys } from '#shared/topology';
import { quickstartRows } from '../../integration/helpers/tiny-run.ts';
import { fixture } from '../rewards/helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'toolrl-reward-modules-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const input = fixture('calc-correct.json');

/** A reward module that notes each import of itself in `marker` and scores `score`. */
function judge(path: string, marker: string, score: number): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(
    path,
    `import { appendFileSync } from 'node:fs';\nappendFileSync(${JSON.stringify(marker)}, 'imported\\n');\n` +
      `export const rewards = { judge: () => ${score} };\n`,
  );
}
const imports = (marker: string) =>
  existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').length - 1 : 0;

/**
 * The store as a remote one looks to a stage (S3: no local folder), so the stage copies the run's input files
 * to its scratch folder, as on Lambda.
 */
const asRemote = (blobs: FolderBlobStore): BlobStore =>
  new Proxy(blobs, {
    get: (target, prop) => {
      if (prop === 'localPath') return undefined;
      const v = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });

/** `toolrl submit` against a store: the checks, then config.yaml and every file, the dataset last (it starts the run). */
async function submit(configPath: string, runId: string, blobs: BlobStore): Promise<string> {
  const prepared = prepareInputs(configPath);
  await blobs.put(keys.config(runId), prepared.configText);
  let last = '';
  for (const f of prepared.files) {
    last = `${keys.inputPrefix(runId)}${f.name}`;
    await blobs.put(last, inputBytes(f));
  }
  return last;
}

function starterContext(blobs: BlobStore) {
  return {
    blobs,
    queues: {},
    log: silentLog,
    now: () => new Date('2026-01-01T00:00:00Z'),
    learnerJobs: { submit: async () => ({ jobId: 'job-1' }) },
  };
}

describe('reward.modules: where a module is loaded and run', () => {
  it('is imported by the reward stage only: not by the checks of submit, not by the run-starter', async () => {
    // GIVEN a config beside its judge module, which notes every import of itself
    const dir = join(root, 'stage-only');
    const marker = join(dir, 'imports.log');
    judge(join(dir, 'judge.ts'), marker, 0.25);
    writeDataset(join(dir, 'train.parquet'), (await quickstartRows('train')).slice(0, 1));
    writeFileSync(
      join(dir, 'run.yaml'),
      toYaml({
        model: { path: 'tiny' },
        data: { train: 'train.parquet' },
        reward: { modules: ['judge.ts'], functions: [{ name: 'judge' }] },
      }),
    );
    const blobs = new FolderBlobStore(join(dir, 'bucket'));

    // WHEN it is submitted and the run-starter starts the run
    const last = await submit(join(dir, 'run.yaml'), 'stage-only', blobs);
    await startRunFromUpload(starterContext(blobs), last);

    // THEN the run started and nothing imported the module yet
    expect((await readRunStatus(blobs, 'stage-only'))?.status).toBe('running');
    expect(imports(marker)).toBe(0);

    // WHEN the reward stage scores a trajectory
    const stage = new RunResources(asRemote(blobs), { scratchDir: join(dir, 'scratch') });
    const reward = await stage.reward('stage-only', null);

    // THEN that is where it is imported, once, and its reward scores
    expect((await reward(input)).score).toBe(0.25);
    expect(imports(marker)).toBe(1);
    await stage.close();
  });

  it("a stage imports the run's uploaded copy only: not the original file, nor any path on the stage's machine", async () => {
    // GIVEN a config naming a module outside its folder by an absolute path, submitted
    const dir = join(root, 'upload-only');
    const outside = join(dir, 'elsewhere', 'judge-abs.ts');
    const marker = join(dir, 'imports.log');
    judge(outside, marker, 0.25);
    writeDataset(join(dir, 'cfg', 'train.parquet'), (await quickstartRows('train')).slice(0, 1));
    writeFileSync(
      join(dir, 'cfg', 'run.yaml'),
      toYaml({
        model: { path: 'tiny' },
        data: { train: 'train.parquet' },
        reward: { modules: [outside], functions: [{ name: 'judge' }] },
      }),
    );
    const bucket = new FolderBlobStore(join(dir, 'bucket'));
    await startRunFromUpload(
      starterContext(bucket),
      await submit(join(dir, 'cfg', 'run.yaml'), 'r-abs', bucket),
    );

    // WHEN the file at that path changes after the upload (on a stage: a file of the stage's machine)
    judge(outside, `${marker}.original`, 0.75);

    // THEN a remote stage and a stage on the bucket's folder both score with the uploaded copy
    for (const blobs of [asRemote(bucket), bucket]) {
      const stage = new RunResources(blobs, { scratchDir: join(dir, 'scratch') });
      expect((await (await stage.reward('r-abs', null))(input)).score).toBe(0.25);
      await stage.close();
    }
    expect(imports(`${marker}.original`)).toBe(0);

    // GIVEN a config put in the bucket by hand, naming code on the stage's machine that the run did not upload
    const planted = join(dir, 'planted', 'steal.ts');
    judge(planted, `${marker}.planted`, 1);
    await bucket.put(
      keys.config('r-planted'),
      toYaml({
        model: { path: 'tiny' },
        data: { train: 'train.parquet' },
        reward: { modules: [planted, '../../planted/steal.ts'], functions: [{ name: 'judge' }] },
      }),
    );
    await bucket.put(
      `${keys.inputPrefix('r-planted')}train.parquet`,
      readFileSync(join(dir, 'cfg', 'train.parquet')),
    );
    await startRunFromUpload(starterContext(bucket), `${keys.inputPrefix('r-planted')}train.parquet`);

    // THEN the reward stage refuses it, looking in the run's input files only, and never imports the planted file
    const stage = new RunResources(asRemote(bucket), { scratchDir: join(dir, 'scratch') });
    await expect(stage.reward('r-planted', null)).rejects.toThrow(
      /reward module steal\.ts not found \(looked at .*scratch\/r-planted\/input\/steal\.ts\)/,
    );
    expect(imports(`${marker}.planted`)).toBe(0);
    await stage.close();
  });

  it("runs unsandboxed in the stage's process: it reads the stage's environment, AWS credentials included", async () => {
    // GIVEN a module that scores 1 when it can see the process's AWS secret key (what the README warns of)
    const dir = join(root, 'env');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'peek.ts'),
      'export const rewards = { peek: () => (process.env.AWS_SECRET_ACCESS_KEY === "stage-secret" ? 1 : 0) };\n',
    );
    const before = process.env.AWS_SECRET_ACCESS_KEY;
    process.env.AWS_SECRET_ACCESS_KEY = 'stage-secret';
    try {
      // WHEN the stage builds and calls it
      const reward = await buildReward(
        { modules: ['peek.ts'], functions: [{ name: 'peek' }] },
        { baseDir: dir },
      );
      // THEN it saw the credentials: only the people who may write runs/*/input/ may name a module
      expect((await reward(input)).score).toBe(1);
    } finally {
      if (before === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
      else process.env.AWS_SECRET_ACCESS_KEY = before;
    }
  });
});

describe('reward.modules: a module that fails', () => {
  const dir = join(root, 'failing');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'failing.ts'),
    'export const rewards = {\n  hangs: () => new Promise(() => {}),\n' +
      "  throws: async () => { throw new Error('judge service down'); },\n  ok: () => 0.5,\n};\n",
  );
  writeFileSync(join(dir, 'broken.ts'), "throw new Error('cannot load the judge');\n");

  it('a call that never settles fails after its timeout, naming the reward, and the reward keeps working', async () => {
    const reward = await buildReward(
      { modules: ['failing.ts'], functions: [{ name: 'hangs', timeout: 0.3 }] },
      { baseDir: dir },
    );
    await expect(reward(input)).rejects.toThrow(
      /^reward hangs failed: reward hangs from failing\.ts did not finish within 0\.3 s$/,
    );
    const ok = await buildReward(
      { modules: ['failing.ts'], functions: [{ name: 'ok', timeout: 0.3 }] },
      { baseDir: dir },
    );
    expect((await ok(input)).score).toBe(0.5);
  });

  it('a call that throws fails with its message; a module that throws as it loads fails the build, naming it', async () => {
    const reward = await buildReward(
      { modules: ['failing.ts'], functions: [{ name: 'throws' }] },
      { baseDir: dir },
    );
    await expect(reward(input)).rejects.toThrow(/^reward throws failed: judge service down$/);
    await expect(
      buildReward({ modules: ['broken.ts'], functions: [{ name: 'x' }] }, { baseDir: dir }),
    ).rejects.toThrow(/cannot load the judge/);
  });

  it('`timeout` is refused on a built-in reward, which is not user code', async () => {
    await expect(
      buildReward({ functions: [{ name: 'format', timeout: 5 }] }, { baseDir: dir }),
    ).rejects.toThrow(
      /reward format: `timeout` applies to a Python function \(`path`\) or a reward from reward\.modules/,
    );
  });
});
