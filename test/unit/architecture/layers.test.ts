// The layering of shared/ as ARCHITECTURE.md declares it ("Layers of `shared/`"), checked against every import
// in the tree: no import points up a layer (or back to an earlier folder of its own layer), no two folders import
// each other, shared/ reaches nothing outside itself, and only tests import test/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type ImportEdge, importsOf, layerTable, typescriptFiles } from './imports.ts';

const ROOT = join(import.meta.dirname, '../../..');
const TABLE = layerTable(readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8'));
const RULE =
  'a module imports only from layers above it in the table and from folders listed before its own in its row ' +
  '(ARCHITECTURE.md, "Layers of `shared/`")';

/**
 * Imports that break the layering today, each with the fix ARCHITECTURE.md names ("Known departures"). The
 * test fails when one of them is gone, so the list only shrinks.
 */
const KNOWN_DEPARTURES: readonly { from: string; to: string }[] = [];

/**
 * `import()` calls whose specifier is computed: loading by path, as Lambda's runtime loads a handler, not a
 * dependency of the module. Each is named here so a new one is a decision.
 */
const COMPUTED_IMPORTS: readonly string[] = [
  // The LocalStack worker loads each stage's handler by its function name, as Lambda does.
  'shared/operator/local-worker.ts',
  // The CLI's commands, a user's reward modules and a user's tool modules: plugins found on disk.
  'shared/cli/main.ts',
  'shared/rewards/modules.ts',
  'shared/tools/module.ts',
  // A user's TypeScript agent (`rollout.agent.path`).
  'shared/agent/runner.ts',
];

interface Unit {
  readonly unit: string;
  readonly rank: number;
  readonly order: number;
  readonly layer: string;
}

const UNITS: Unit[] = TABLE.flatMap((row) =>
  row.units.map((unit, order) => ({ unit, rank: row.rank, order, layer: row.name })),
);

/** The unit of a shared/ path: the longest declared unit that is the path or a folder holding it. */
function unitOf(path: string): Unit | undefined {
  const rel = path.replace(/^shared\//, '');
  return UNITS.filter((u) =>
    u.unit.endsWith('/') ? rel.startsWith(u.unit) : rel.replace(/\.ts$/, '') === u.unit.replace(/\.ts$/, ''),
  ).sort((a, b) => b.unit.length - a.unit.length)[0];
}

const stripExt = (p: string) => p.replace(/\.(ts|js|mts)$/, '');
const sharedEdges = typescriptFiles(ROOT, 'shared').flatMap((f) => importsOf(ROOT, f));
const isKnown = (e: ImportEdge) =>
  KNOWN_DEPARTURES.some((d) => d.from === e.from && d.to === stripExt(e.to ?? ''));
const describeEdge = (e: ImportEdge) =>
  `${e.from} imports ${e.specifier}${e.kind === 'dynamic' ? ' (dynamic)' : ''}`;

describe('the layer table of ARCHITECTURE.md', () => {
  it('lists six layers and every unit it lists exists under shared/', () => {
    expect(TABLE.map((r) => r.rank)).toEqual([1, 2, 3, 4, 5, 6]);
    const missing = UNITS.filter((u) => !existsSync(join(ROOT, 'shared', u.unit)));
    expect(
      missing.map((u) => u.unit),
      'units in the table with no such file or folder',
    ).toEqual([]);
  });

  it('gives every TypeScript file under shared/ a layer', () => {
    const unplaced = typescriptFiles(ROOT, 'shared').filter((f) => !unitOf(f));
    expect(unplaced, 'files under shared/ in no folder of the layer table').toEqual([]);
    const topLevel = readdirSync(join(ROOT, 'shared'), { withFileTypes: true })
      .filter((e) => e.isDirectory() || e.name.endsWith('.ts'))
      .map((e) => (e.isDirectory() ? `${e.name}/` : e.name));
    const covered = topLevel.filter((t) => UNITS.some((u) => u.unit === t || u.unit.startsWith(t)));
    expect(covered).toEqual(topLevel);
  });
});

describe('imports under shared/', () => {
  it('finds the imports (the reader sees static, type, re-export and dynamic imports)', () => {
    // Guards the reader itself: a parser that saw nothing would make every rule below pass.
    const kinds = new Set(sharedEdges.filter((e) => e.to).map((e) => e.kind));
    expect([...kinds].sort()).toEqual(['dynamic', 'static', 'type']);
    expect(sharedEdges.filter((e) => e.to).length).toBeGreaterThan(500);
  });

  it('never point up a layer', () => {
    const problems: string[] = [];
    for (const e of sharedEdges) {
      if (e.computed || !e.to || isKnown(e)) continue;
      const from = unitOf(e.from) as Unit;
      if (!e.to.startsWith('shared/')) {
        problems.push(
          `${describeEdge(e)}: shared/ imports npm packages and itself only, never ${e.to.split('/')[0]}/`,
        );
        continue;
      }
      const to = unitOf(e.to);
      if (!to) {
        problems.push(`${describeEdge(e)}: ${e.to} is in no folder of the layer table`);
        continue;
      }
      if (to.unit === from.unit) continue;
      const upward = to.rank > from.rank || (to.rank === from.rank && to.order > from.order);
      if (upward)
        problems.push(
          `${describeEdge(e)}: ${from.unit} is ${from.layer} (layer ${from.rank}), ${to.unit} is ${to.layer} ` +
            `(layer ${to.rank}${to.rank === from.rank ? `, listed after ${from.unit}` : ''}); ${RULE}`,
        );
    }
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('form no cycle between folders', () => {
    // With the order rule above a cycle needs an upward import, so this names the pairs behind the allow-list.
    const pairs = new Map<string, ImportEdge>();
    for (const e of sharedEdges) {
      if (isKnown(e)) continue;
      const from = unitOf(e.from);
      const to = e.to?.startsWith('shared/') ? unitOf(e.to) : undefined;
      if (from && to && from.unit !== to.unit) pairs.set(`${from.unit} -> ${to.unit}`, e);
    }
    const cycles = [...pairs.keys()]
      .map((k) => k.split(' -> ') as [string, string])
      .filter(([a, b]) => a < b && pairs.has(`${b} -> ${a}`))
      .map(
        ([a, b]) =>
          `${a} <-> ${b}: ${describeEdge(pairs.get(`${a} -> ${b}`) as ImportEdge)}; ` +
          `${describeEdge(pairs.get(`${b} -> ${a}`) as ImportEdge)}`,
      );
    expect(cycles, cycles.join('\n')).toEqual([]);
  });

  it('load by a computed path only where listed', () => {
    const computed = sharedEdges.filter((e) => e.computed).map((e) => e.from);
    expect(computed.sort()).toEqual([...COMPUTED_IMPORTS].sort());
  });

  it('still break the layering in every allow-listed place (the list only shrinks)', () => {
    const gone = KNOWN_DEPARTURES.filter(
      (d) => !sharedEdges.some((e) => e.from === d.from && stripExt(e.to ?? '') === d.to),
    );
    expect(gone, 'allow-listed departures that no longer exist: remove them from KNOWN_DEPARTURES').toEqual(
      [],
    );
  });
});

describe('imports outside shared/', () => {
  it('reach test/ only from test/', () => {
    const offenders = ['bench', 'functions', 'infra', 'bin', 'scripts']
      .filter((d) => existsSync(join(ROOT, d)))
      .flatMap((d) => typescriptFiles(ROOT, d))
      .flatMap((f) => importsOf(ROOT, f))
      .filter((e) => e.to?.startsWith('test/'))
      .map(
        (e) =>
          `${describeEdge(e)}: test helpers are not product or benchmark code; move what both need into shared/`,
      );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });
});

describe('the resolver (shared/config/) is the only reader of the alias table', () => {
  it('no product file outside shared/config/ imports the alias table (shared/config/aliases.ts, key-aliases.ts)', () => {
    // Other systems' names (verl, MindSpeed-RL, the seed projects) are translated where the config is read, and
    // nowhere else: domain code, the stages and the CLI see toolrl's names only (ARCHITECTURE.md, layer 3).
    const tables = ['shared/config/aliases', 'shared/config/key-aliases'];
    const isTable = (to: string | null | undefined) => tables.includes(stripExt(to ?? ''));
    const offenders = ['shared', 'bench', 'functions', 'infra', 'bin', 'scripts', 'examples']
      .filter((d) => existsSync(join(ROOT, d)))
      .flatMap((d) => typescriptFiles(ROOT, d))
      .filter((f) => !f.startsWith('shared/config/'))
      .flatMap((f) => importsOf(ROOT, f))
      .filter((e) => isTable(e.to))
      .map((e) => `${describeEdge(e)}: only the resolver (shared/config/) reads the alias table`);
    expect(offenders, offenders.join('\n')).toEqual([]);
    // The rule sees the table's readers: the resolver itself imports it.
    expect(
      tables.every((t) =>
        sharedEdges.some((e) => e.from.startsWith('shared/config/') && stripExt(e.to ?? '') === t),
      ),
    ).toBe(true);
  });
});

describe('one import style (ARCHITECTURE.md, "One import style")', () => {
  /** A TypeScript module under shared/ (a `#shared/x` specifier names `shared/x.ts`); other files keep their paths. */
  const sharedModule = (to: string | null) =>
    to?.startsWith('shared/') === true && (to.endsWith('.ts') || !/\.[a-z]+$/.test(to));
  const styleProblem = (e: ImportEdge, fromUnit: string | undefined): string | null => {
    if (e.computed || !sharedModule(e.to)) return null;
    const same = fromUnit !== undefined && unitOf(e.to as string)?.unit === fromUnit;
    if (same && !e.specifier.startsWith('.'))
      return `${describeEdge(e)}: within ${fromUnit} imports are relative, with the extension`;
    if (!same && !e.specifier.startsWith('#shared/'))
      return `${describeEdge(e)}: across folders of the table, and from outside shared/, import #shared/${stripExt((e.to as string).slice(7))}`;
    return null;
  };

  it('under shared/: relative within a folder of the table, #shared/ across folders', () => {
    const problems = sharedEdges
      .map((e) => styleProblem(e, unitOf(e.from)?.unit))
      .filter((p): p is string => p !== null);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('outside shared/: #shared/ only', () => {
    const problems = ['test', 'bench', 'functions', 'infra', 'bin', 'scripts', 'examples']
      .filter((d) => existsSync(join(ROOT, d)))
      .flatMap((d) => typescriptFiles(ROOT, d))
      .flatMap((f) => importsOf(ROOT, f))
      .map((e) => styleProblem(e, undefined))
      .filter((p): p is string => p !== null);
    expect(problems, problems.join('\n')).toEqual([]);
  });
});
