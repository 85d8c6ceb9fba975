// The run config: errors name the field, referenced files, and the resolved form stored in run.json.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseRunConfig } from '#shared/config/resolve';
import { checkInputNames, referencedFiles, resolveRunConfig } from '#shared/pipeline/run-config';
import { notifiedKeys } from '#shared/schemas/messages/s3-event';

const yaml = `
model: { path: tiny }
data: { train: [data/a.parquet, more/b.parquet], val: data/v.parquet }
rollout: { n: 4, multi_turn: { max_turns: 3 } }
trainer: { sft: { data: data/sft.jsonl } }
tools: { config_file: tools.yaml }
reward: { functions: [{ name: retool }], modules: [rewards/mine.ts] }
`;

describe('run config', () => {
  it('parses YAML with defaults filled in', () => {
    const c = parseRunConfig(yaml, 'run.yaml');
    expect(c.rollout.n).toBe(4);
    expect(c.rollout.multi_turn.max_turns).toBe(3);
    expect(c.rollout.multi_turn.max_tool_calls).toBe(4);
  });

  it('names the bad field and the file', () => {
    expect(() =>
      parseRunConfig('model: { path: tiny }\ndata: { train: a.parquet }\nrollout: { n: 0 }', 'run.yaml'),
    ).toThrow(/run\.yaml is not a valid run config:[\s\S]*rollout\.n/);
    expect(() =>
      parseRunConfig('model: {path: tiny}\ndata: {train: a.parquet}\ntrainer: {batch_promts: 4}', 'x.yaml'),
    ).toThrow(/batch_promts/);
    expect(() =>
      parseRunConfig(
        'model: {path: tiny, rollout_quantization_block_size: 48}\ndata: {train: a.parquet}',
        'q.yaml',
      ),
    ).toThrow(/power of two[\s\S]*model\.rollout_quantization_block_size/);
    expect(
      parseRunConfig(
        'model: {path: tiny, rollout_quantization_block_size: 128}\ndata: {train: a.parquet}',
        'q.yaml',
      ).model.rollout_quantization_block_size,
    ).toBe(128);
    expect(() => parseRunConfig('- a\n- b', 'list.yaml')).toThrow(ConfigError);
    expect(() => parseRunConfig('a: [', 'bad.yaml')).toThrow(/bad\.yaml is not valid YAML/);
  });

  it('lists the files it names and resolves data paths to input keys', () => {
    const c = parseRunConfig(yaml, 'run.yaml');
    expect(referencedFiles(c)).toEqual({
      train: ['data/a.parquet', 'more/b.parquet'],
      val: ['data/v.parquet'],
      other: ['data/sft.jsonl', 'tools.yaml', 'rewards/mine.ts'],
    });
    const r = resolveRunConfig(c, 'r1');
    expect(r.data.train).toEqual(['runs/r1/input/a.parquet', 'runs/r1/input/b.parquet']);
    expect(r.data.val).toBe('runs/r1/input/v.parquet');
    expect(r.trainer.sft?.data).toBe('runs/r1/input/sft.jsonl');
    expect(r.tools.config_file).toBe('tools.yaml');
  });

  it("uploads a stage's own SFT demonstrations and resolves their path to an input key", () => {
    const c = parseRunConfig(
      `model: {path: tiny}
data: {train: a.parquet}
trainer: {sft: {data: warm.jsonl}}
stages:
  - {name: format, data: {train: f.parquet}, overrides: {trainer: {sft: {data: demos/format.jsonl, steps: 5}}}}
  - {name: full, data: {train: a.parquet}}`,
      'run.yaml',
    );
    expect(referencedFiles(c).other).toEqual(['warm.jsonl', 'demos/format.jsonl']);
    const r = resolveRunConfig(c, 'r1');
    expect(r.stages?.[0]?.overrides).toEqual({
      trainer: { sft: { data: 'runs/r1/input/format.jsonl', steps: 5 } },
    });
    expect(r.stages?.[1]?.overrides).toEqual({});
    expect(r.trainer.sft?.data).toBe('runs/r1/input/warm.jsonl');
  });

  it("uploads trainer.sft.ptx_data (the run's and a stage's) and resolves it to an input key", () => {
    const c = parseRunConfig(
      `model: {path: tiny}
data: {train: a.parquet}
trainer: {sft: {data: warm.jsonl, ptx_coef: 0.3, ptx_data: data/right.parquet}}
stages:
  - {name: late, data: {train: a.parquet}, overrides: {trainer: {sft: {ptx_data: more/late.jsonl}}}}`,
      'run.yaml',
    );
    expect(c.trainer.sft?.ptx_coef).toBe(0.3);
    expect(referencedFiles(c).other).toEqual(['warm.jsonl', 'data/right.parquet', 'more/late.jsonl']);
    const r = resolveRunConfig(c, 'r1');
    expect(r.trainer.sft?.data).toBe('runs/r1/input/warm.jsonl');
    expect(r.trainer.sft?.ptx_data).toBe('runs/r1/input/right.parquet');
    expect(r.stages?.[0]?.overrides).toEqual({ trainer: { sft: { ptx_data: 'runs/r1/input/late.jsonl' } } });
  });

  it('refuses ptx_data or ptx_batch_size without ptx_coef, naming the fix', () => {
    const run = (sft: string) => `model: {path: tiny}\ndata: {train: a.parquet}\ntrainer: {sft: {${sft}}}`;
    expect(() => parseRunConfig(run('data: w.jsonl, ptx_data: r.jsonl'), 'run.yaml')).toThrow(
      /ptx_data and ptx_batch_size are read only with ptx_coef > 0: set ptx_coef[\s\S]*trainer\.sft\.ptx_coef/,
    );
    expect(() => parseRunConfig(run('data: w.jsonl, ptx_batch_size: 4'), 'run.yaml')).toThrow(/set ptx_coef/);
    expect(
      parseRunConfig(run('data: w.jsonl, ptx_coef: 0.1'), 'run.yaml').trainer.sft?.ptx_data,
    ).toBeUndefined();
  });

  it('lists prompt template files (run and stages) with the inputs to upload; built-in names are not files', () => {
    const c = parseRunConfig(
      `model: {path: tiny}
data: {train: a.parquet, prompt_type: prompts/mine.yaml}
stages:
  - {name: format, data: {train: f.parquet, prompt_type: toolcall}}
  - {name: full, data: {train: a.parquet, prompt_type: prompts/mine.yaml}}
  - {name: last, data: {train: a.parquet, prompt_type: ./other.yml}}`,
      'run.yaml',
    );
    expect(referencedFiles(c).other).toEqual(['prompts/mine.yaml', './other.yml']);
  });

  it('rejects stage data settings nothing would read, naming where they go', () => {
    const stage = (s: string) => `model: {path: tiny}\ndata: {train: a.parquet}\nstages: [${s}]`;
    expect(() =>
      parseRunConfig(stage('{name: s, data: {train: b.parquet, max_prompt_length: 4096}}'), 'run.yaml'),
    ).toThrow(
      /the prompt limit is one per run \(datasets are checked against it when the run starts\): set data\.max_prompt_length at the top level\n {2}→ at stages\[0\]\.data\.max_prompt_length/,
    );
    expect(() =>
      parseRunConfig(
        stage('{name: s, data: {train: b.parquet}, overrides: {data: {shuffle: false}}}'),
        'run.yaml',
      ),
    ).toThrow(
      /a stage's data settings go in its own `data:` block .* not in overrides\n {2}→ at stages\[0\]\.overrides\.data/,
    );
    expect(() =>
      parseRunConfig(stage('{name: s, data: {train: b.parquet, shufle: false}}'), 'run.yaml'),
    ).toThrow(/shufle/);
    // Unset stage settings stay unset (the run's apply), rather than defaults that would hide the run's.
    const c = parseRunConfig(stage('{name: s, data: {train: b.parquet}}'), 'run.yaml');
    expect(c.stages?.[0]?.data).toEqual({ train: 'b.parquet' });
  });

  it('uploads the code a config names: Python tools and rewards, tool modules, and those of its tools file', () => {
    const c = parseRunConfig(
      `
model: { path: tiny }
data: { train: a.parquet }
tools:
  tools:
    - { path: tools/my_tool.py, name: MyTool }
    - { kind: module, module: ./ts/word.ts }
    - { class_name: my_pkg.tools.Installed }
reward: { functions: [{ path: rewards/my_reward.py, name: compute_score }] }
`,
      'run.yaml',
    );
    expect(referencedFiles(c).other).toEqual(['tools/my_tool.py', './ts/word.ts', 'rewards/my_reward.py']);
    const withFile = parseRunConfig(
      'model: {path: tiny}\ndata: {train: a.parquet}\ntools: {config_file: cfg/tools.yaml}',
      'r.yaml',
    );
    expect(referencedFiles(withFile, () => [{ path: 'calc.py', name: 'Calc', config: {} }]).other).toEqual([
      'cfg/tools.yaml',
      'cfg/calc.py',
    ]);
  });

  it('takes a separate critic only for GAE on one learner process, and critic warm-up only with one', () => {
    const base = 'model: {path: tiny}\ndata: {train: a.parquet}\n';
    expect(() => parseRunConfig(`${base}critic: {model: {path: tiny}}`, 'c.yaml')).toThrow(
      /a critic estimates values for GAE: set algorithm.adv_estimator: gae \(it is grpo\)[\s\S]*critic/,
    );
    expect(() =>
      parseRunConfig(
        `${base}algorithm: {adv_estimator: gae}\ncritic: {model: {path: tiny}}\ntrainer: {num_gpus: 2}`,
        'c.yaml',
      ),
    ).toThrow(
      /sharded learner \(trainer.num_gpus: 2\) does not train a separate critic: set trainer.num_gpus: 1/,
    );
    expect(() => parseRunConfig(`${base}trainer: {critic_warmup: 2}`, 'c.yaml')).toThrow(
      /critic_warmup trains a separate critic alone first: add a `critic:` block/,
    );
    const ok = parseRunConfig(
      `${base}algorithm: {adv_estimator: gae}\ncritic: {model: {path: tiny}, lr: 2.0e-5}\ntrainer: {critic_warmup: 2, ppo_mini_batch_size: 4}`,
      'c.yaml',
    );
    expect(ok.critic).toMatchObject({
      lr: 2e-5,
      grad_clip: 1,
      model: { path: 'tiny', gradient_checkpointing: false },
    });
    expect(ok.trainer).toMatchObject({ critic_warmup: 2, ppo_mini_batch_size: 4 });
  });

  it('refuses two referenced files that would share an input name', () => {
    const c = parseRunConfig('model: {path: tiny}\ndata: {train: [x/a.parquet, y/a.parquet]}', 'run.yaml');
    expect(() => checkInputNames(c)).toThrow(
      /x\/a\.parquet and y\/a\.parquet would both be uploaded as input\/a\.parquet/,
    );
  });
});

describe('S3 notification keys', () => {
  it('decodes form-encoded keys (+ is a space, %2B a plus)', () => {
    const keys = notifiedKeys({
      Records: [
        {
          eventSource: 'aws:s3',
          eventTime: '2025-01-01T00:00:00Z',
          eventName: 'ObjectCreated:Put',
          s3: { bucket: { name: 'b' }, object: { key: 'runs/my-run/input/train+set%2B1.parquet' } },
        },
      ],
    });
    expect(keys.map((k) => k.key)).toEqual(['runs/my-run/input/train set+1.parquet']);
    expect(notifiedKeys({ Service: 'Amazon S3', Event: 's3:TestEvent' })).toEqual([]);
  });
});
