// What `toolrl train` and `toolrl submit` upload under runs/<runId>/input/: the effective config (aliases resolved,
// command-line overrides applied) as config.yaml, and every file it names, JSON datasets converted to Parquet on
// the way (`data.train: sample_data.jsonl` is uploaded as sample_data.parquet and the config says so). Everything
// is read and checked here, before anything is uploaded: a bad config or dataset never becomes a failed run.
import { accessSync, constants, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { stringify } from 'yaml';
import { DatasetError, encodeDataset } from '#shared/data/dataset';
import { datasetFormat, parquetName, readJsonDataset } from '#shared/data/dataset-file';
import { type RunConfig, RunConfigSchema } from '#shared/schemas/config/run';
import type { ToolSpec } from '#shared/schemas/config/tools';
import '#shared/bfcl/register-tool'; // BFCL's tool kind joins the built-ins toolSource knows
import { isPlain, type Plain } from '#shared/config/apply-aliases';
import { ConfigError, loadRunConfig, readToolsFile, resolveToolSpecs } from '#shared/config/resolve';
import { toolSource } from '#shared/tools/kinds';
import { checkInputNames, inputName, referencedFiles } from './run-config.ts';

export interface InputFile {
  /** The file name under runs/<runId>/input/. */
  readonly name: string;
  /** The file on this machine. */
  readonly path: string;
  /** A JSON dataset converted to Parquet as it is uploaded. */
  readonly convert: boolean;
}

export interface PreparedInputs {
  readonly config: RunConfig;
  /** config.yaml as uploaded. */
  readonly configText: string;
  /** Other inputs (tool configs, reward modules, SFT data), then validation, then training datasets. */
  readonly files: readonly InputFile[];
  /** Keys accepted but ignored (another system's settings), and datasets converted. */
  readonly notices: readonly string[];
}

export interface PrepareOptions {
  /** Hydra-style `key=value` overrides. */
  readonly overrides?: readonly string[];
  /** Replace data.train with these files (`toolrl submit --dataset`). */
  readonly datasets?: readonly string[];
  /**
   * Replace trainer.max_steps (`toolrl train --max-steps`), whatever format the config is in: the feeder issues
   * only the batches the learner will train under it in a deterministic run, so the two must read the same number.
   */
  readonly maxSteps?: number;
}

/** Applies `fn` to every dataset path of the config (data and stage data, train and val), in place. */
function mapDatasetPaths(config: Plain, fn: (p: string) => string): void {
  const mapData = (data: unknown) => {
    if (!isPlain(data)) return;
    for (const key of ['train', 'val'] as const) {
      const v = data[key];
      if (typeof v === 'string') data[key] = fn(v);
      else if (Array.isArray(v)) data[key] = v.map((p) => (typeof p === 'string' ? fn(p) : p));
    }
  };
  mapData(config.data);
  if (Array.isArray(config.stages)) for (const s of config.stages) if (isPlain(s)) mapData(s.data);
}

/** Reads a run config file with its overrides, and the files it names, ready to upload. */
export function prepareInputs(configPath: string, opts: PrepareOptions = {}): PreparedInputs {
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${configPath}: ${(err as Error).message}`);
  }
  const configDir = dirname(resolve(configPath));
  const loaded = loadRunConfig(text, configPath, opts.overrides ?? [], configDir);
  const effective = structuredClone(loaded.effective);
  if (opts.maxSteps !== undefined)
    effective.trainer = {
      ...(isPlain(effective.trainer) ? effective.trainer : {}),
      max_steps: opts.maxSteps,
    };
  const localPaths = new Map<string, string>();
  if (opts.datasets?.length) {
    // The uploaded config names the datasets by the file names they get under input/.
    const names = opts.datasets.map((d) => basename(d));
    const data = isPlain(effective.data) ? effective.data : {};
    effective.data = { ...data, train: names.length === 1 ? names[0] : names };
    for (const d of opts.datasets) localPaths.set(basename(d), resolve(d));
  }
  const local = (p: string) => localPaths.get(p) ?? (isAbsolute(p) ? p : join(configDir, p));

  // JSON datasets become Parquet files of the same name; the uploaded config names those.
  const converted = new Map<string, string>();
  const notices = [...loaded.notices];
  mapDatasetPaths(effective, (p) => {
    if (datasetFormat(p) !== 'json') return p;
    const name = parquetName(p);
    converted.set(name, local(p));
    return name;
  });
  const parsed = RunConfigSchema.safeParse(effective);
  if (!parsed.success) throw new ConfigError(`${configPath}: ${parsed.error.message}`);
  const config = parsed.data;
  // The tools file's own code files (Python tools, tool modules) are uploaded with it.
  const toolsFile = (p: string) => {
    const path = isAbsolute(p) ? p : join(configDir, p);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError(`cannot read ${path}: ${(err as Error).message}`);
    }
    try {
      return readToolsFile(text, path);
    } catch (err) {
      throw new ConfigError(`${configPath}: ${(err as Error).message}`);
    }
  };
  checkInputNames(config, toolsFile);

  const refs = referencedFiles(config, toolsFile);
  const files: InputFile[] = [];
  for (const p of [...refs.other, ...refs.val, ...refs.train]) {
    const source = converted.get(p);
    const path = source ?? local(p);
    let readable = false;
    try {
      accessSync(path, constants.R_OK);
      readable = statSync(path).isFile();
    } catch {}
    if (!readable)
      throw new ConfigError(
        `${configPath} names ${source ? basename(source) : p}, which is not a readable file (${path})`,
      );
    if (source) {
      readJsonDatasetOrThrow(source); // refused here, before any upload
      notices.push(`${basename(source)} is converted to Parquet and uploaded as input/${inputName(p)}`);
    }
    files.push({ name: inputName(p), path, convert: source !== undefined });
  }
  const toolSpecs = [
    ...resolveToolSpecs(config.tools.tools ?? []),
    ...(config.tools.config_file ? toolsFile(config.tools.config_file) : []),
  ];
  const taken = new Set(files.map((f) => f.name));
  // Before the datasets: the last upload starts the run.
  const firstDataset = refs.other.length;
  files.splice(
    firstDataset,
    0,
    ...pythonClassModules(toolSpecs, configDir).filter((f) => !taken.has(f.name)),
  );
  const header = `# The effective run config: ${basename(configPath)} in toolrl's names${
    opts.overrides?.length ? `, with ${opts.overrides.join(' ')}` : ''
  }\n`;
  return { config, configText: header + stringify(effective), files, notices };
}

/**
 * The code of Python tool classes named by dotted path (`class_name: my_tools.LookupTool`) whose top module sits
 * next to the config (`my_tools.py`, or the `my_tools/` package, uploaded under its own folder): an embedded run
 * imports it from there, so it travels with the run to LocalStack and AWS, whose tool-call stage imports from
 * the run's input folder. A module not found there is left to the tools' Python environment (verl's own tools,
 * an installed package).
 */
function pythonClassModules(specs: readonly ToolSpec[], configDir: string): InputFile[] {
  const tops = new Set<string>();
  for (const spec of specs) {
    if (spec.path !== undefined || spec.class_name === undefined) continue;
    let python = false;
    try {
      python = toolSource(spec).type === 'python';
    } catch {} // an unknown kind fails the registry, which says why
    if (python) tops.add(spec.class_name.split('.')[0]!);
  }
  const out: InputFile[] = [];
  for (const top of tops) {
    const file = join(configDir, `${top}.py`);
    const pkg = join(configDir, top);
    if (existsSync(file) && statSync(file).isFile())
      out.push({ name: `${top}.py`, path: file, convert: false });
    else if (existsSync(join(pkg, '__init__.py')))
      for (const rel of readdirSync(pkg, { recursive: true, encoding: 'utf8' }).sort()) {
        const path = join(pkg, rel);
        if (rel.split(sep).includes('__pycache__') || !statSync(path).isFile()) continue;
        out.push({ name: relative(configDir, path).split(sep).join('/'), path, convert: false });
      }
  }
  return out;
}

function readJsonDatasetOrThrow(path: string): void {
  try {
    readJsonDataset(path);
  } catch (err) {
    if (err instanceof DatasetError) throw new ConfigError(err.message);
    throw err;
  }
}

/** The bytes uploaded for an input file (a JSON dataset as Parquet). */
export function inputBytes(file: InputFile): Uint8Array {
  return file.convert ? encodeDataset(readJsonDataset(file.path)) : readFileSync(file.path);
}
