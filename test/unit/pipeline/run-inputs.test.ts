// What `toolrl train` and `toolrl submit` upload for Python tool classes named by dotted path: the module next
// to the config goes up with the run (so the tool-call stage on LocalStack and AWS imports what the embedded run
// imported), a module found elsewhere is left to the tools' environment.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as fromYaml, stringify as toYaml } from 'yaml';
import { writeDataset } from '#shared/data/dataset';
import { prepareInputs } from '#shared/pipeline/run-inputs';
import { quickstartRows } from '../../integration/helpers/tiny-run.ts';

const dir = mkdtempSync(join(tmpdir(), 'toolrl-run-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const schema = (name: string) => ({
  type: 'function',
  function: { name, description: name, parameters: { type: 'object', properties: {} } },
});
const put = (rel: string, text = '') => {
  mkdirSync(join(dir, rel, '..'), { recursive: true });
  writeFileSync(join(dir, rel), text);
};

describe('the inputs of a run with Python tool classes', () => {
  it('upload the module or package a dotted class_name names when it sits next to the config', async () => {
    put('calc_tool.py', 'class CalcTool: ...\n');
    put('mypkg/__init__.py');
    put('mypkg/tools/lookup.py', 'class Lookup: ...\n');
    put('mypkg/__pycache__/lookup.cpython-311.pyc', 'x');
    put(
      'tools.yaml',
      toYaml({
        tools: [
          { class_name: 'calc_tool.CalcTool', config: {}, tool_schema: schema('calculator') },
          // installed in the tools environment, not here: left to it
          { class_name: 'verl.tools.gsm8k_tool.Gsm8kTool', config: {}, tool_schema: schema('gsm8k') },
          // a built-in under verl's class name: no code
          {
            class_name: 'verl.tools.sandbox_fusion_tools.SandboxFusionTool',
            config: {},
            tool_schema: schema('code'),
          },
        ],
      }),
    );
    writeDataset(join(dir, 'train.parquet'), (await quickstartRows('train')).slice(0, 1));
    put(
      'run.yaml',
      toYaml({
        model: { path: 'tiny' },
        data: { train: 'train.parquet' },
        tools: { config_file: 'tools.yaml' },
      }),
    );
    const inline = join(dir, 'inline.yaml');
    writeFileSync(
      inline,
      toYaml({
        model: { path: 'tiny' },
        data: { train: 'train.parquet' },
        tools: {
          tools: [{ class_name: 'mypkg.tools.lookup.Lookup', config: {}, tool_schema: schema('lookup') }],
        },
      }),
    );

    const byFile = prepareInputs(join(dir, 'run.yaml'));
    expect(byFile.files.map((f) => f.name)).toEqual(['tools.yaml', 'calc_tool.py', 'train.parquet']);
    expect(byFile.files[1]!.path).toBe(join(dir, 'calc_tool.py'));

    const byEntry = prepareInputs(inline);
    // the package whole, under its own folder, bytecode left out; the dataset still last (its upload starts the run)
    expect(byEntry.files.map((f) => f.name)).toEqual([
      'mypkg/__init__.py',
      'mypkg/tools/lookup.py',
      'train.parquet',
    ]);
  });
});

describe('the inputs of a run trained with --max-steps', () => {
  it("replace the config's trainer.max_steps in the resolved and the uploaded config, in any config format", async () => {
    writeDataset(join(dir, 'steps.parquet'), (await quickstartRows('train')).slice(0, 1));
    const cases = {
      // toolrl's own keys, with max_steps set and without a trainer section
      'own.yaml': { model: { path: 'tiny' }, data: { train: 'steps.parquet' }, trainer: { max_steps: 16 } },
      'bare.yaml': { model: { path: 'tiny' }, data: { train: 'steps.parquet' } },
      // verl's name for it
      'verl.yaml': {
        actor_rollout_ref: { model: { path: 'tiny' } },
        data: { train_files: 'steps.parquet' },
        trainer: { total_training_steps: 16 },
      },
    };
    for (const [name, config] of Object.entries(cases)) {
      put(name, toYaml(config));
      const inputs = prepareInputs(join(dir, name), { maxSteps: 24 });
      expect(inputs.config.trainer.max_steps, name).toBe(24);
      expect(fromYaml(inputs.configText).trainer.max_steps, name).toBe(24);
      expect(prepareInputs(join(dir, name)).config.trainer.max_steps, name).toBe(
        name === 'bare.yaml' ? undefined : 16,
      );
    }
  });
});
