// Accuracy by kind of question (the expression's operators) and by held-out phrasing, with the expressions the wrong
// answers sent to the calculator. It reads a run's own validation answers (the run folder keeps them under
// trajectories/val-v<N>-p<i>/) or the answers `toolrl eval --out DIR` kept:
//   npx tsx examples/smollm2/by-kind.ts runs/<runId> [--version 16] [--data examples/smollm2/data/val.parquet]
//   npx toolrl eval --policy runs/<runId>/policy/v16 --data examples/smollm2/data/val.parquet --out /tmp/v16
//   npx tsx examples/smollm2/by-kind.ts /tmp/v16
// The phrasing of validation row i is row i's place in make-data.ts's turns: kind i mod 6, phrasing floor(i / 6)
// mod `--phrasings` (3; 1 for val-one-phrasing.parquet).
// With --train it tallies a run's training answers instead (runs/<runId>/groups/e*-p*.json, the groups whose rewards
// were all equal included), by kind and by the policy versions that wrote them, --every versions a column:
//   npx tsx examples/smollm2/by-kind.ts runs/<runId> --train [--every 10]
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readDataset } from '#shared/data/dataset';
import { ScoredGroupSchema } from '#shared/schemas/scored-group';
import { type Trajectory, TrajectorySchema } from '#shared/schemas/trajectory';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    version: { type: 'string' },
    data: { type: 'string' },
    phrasings: { type: 'string', default: '3' },
    train: { type: 'boolean', default: false },
    every: { type: 'string', default: '10' },
  },
});
const dir = positionals[0];
if (!dir) {
  process.stderr.write(
    'usage: npx tsx examples/smollm2/by-kind.ts RUN_DIR|EVAL_OUT_DIR [--version N] [--data VAL.parquet] [--phrasings K]\n',
  );
  process.exit(2);
}
const phrasings = Number(values.phrasings);
const KINDS = 6;
const dataPath =
  values.data ?? join(import.meta.dirname, 'data', values.train ? 'train.parquet' : 'val.parquet');

/** `a + b - c` -> `+-`: the kind of question, whatever its numbers. */
const kindOf = (expr: string) => expr.replace(/[^-+*/]/g, '') || '(none)';

/** The kind of the question in `row` of the dataset (its `extra_info.expression`). */
function rowKind(row: Record<string, unknown> | undefined, where: string): string {
  const expr = String((row?.extra_info as { expression?: unknown } | undefined)?.expression ?? '');
  if (!row || !expr) throw new Error(`${where}: no row with extra_info.expression in ${dataPath}`);
  return kindOf(expr);
}

/** The reward's own verdict on an answer (the toolcall reward's final-answer component) and the kind of expression
 * its first calculator call sent, or 'no call'. */
function verdict(traj: Trajectory): { right: boolean; wrote: string } {
  const call = traj.turns.flatMap((u) => u.toolCalls)[0];
  return {
    right: (traj.rewardComponents['toolcall/final_answer'] ?? 0) > 0.5,
    wrote: call ? kindOf(String((call.arguments as { expression?: unknown }).expression ?? '')) : 'no call',
  };
}

if (values.train) {
  await trainingTally(dir);
  process.exit(0);
}

/** Validation answers by row index: a run folder's own, or an evaluation's kept groups. */
function answers(): Map<number, Trajectory[]> {
  const byRow = new Map<number, Trajectory[]>();
  const trajDir = join(dir!, 'trajectories');
  if (existsSync(trajDir)) {
    const versions = readdirSync(trajDir)
      .map((d) => /^val-v(\d+)-p\d+$/.exec(d)?.[1])
      .filter((v): v is string => v !== undefined)
      .map(Number);
    if (versions.length === 0) throw new Error(`${trajDir} holds no validation answers (val-v<N>-p<i>)`);
    const version = values.version === undefined ? Math.max(...versions) : Number(values.version);
    if (!versions.includes(version))
      throw new Error(
        `${trajDir}: no validation of v${version} (${[...new Set(versions)]
          .sort((a, b) => a - b)
          .map((v) => `v${v}`)
          .join(', ')})`,
      );
    process.stderr.write(`validation of v${version} in ${dir}\n`);
    for (const d of readdirSync(trajDir)) {
      const m = /^val-v(\d+)-p(\d+)$/.exec(d);
      if (!m || Number(m[1]) !== version) continue;
      byRow.set(
        Number(m[2]),
        readdirSync(join(trajDir, d))
          .sort()
          .map((f) => TrajectorySchema.parse(JSON.parse(readFileSync(join(trajDir, d, f), 'utf8')))),
      );
    }
    return byRow;
  }
  const runs = readdirSync(join(dir!, 'runs'));
  if (runs.length !== 1) throw new Error(`${dir}/runs should hold one evaluation, found ${runs.length}`);
  const groupsDir = join(dir!, 'runs', runs[0]!, 'groups');
  for (const file of readdirSync(groupsDir).sort()) {
    const group = ScoredGroupSchema.parse(JSON.parse(readFileSync(join(groupsDir, file), 'utf8')));
    byRow.set(Number(/-p(\d+)$/.exec(group.groupId)?.[1]), group.trajectories);
  }
  return byRow;
}

interface Tally {
  kind: string;
  right: number;
  answers: number;
  example: string;
  wrongCalls: Map<string, number>;
}
const rows = await readDataset(dataPath);
const byKind = new Map<string, Tally>();
const byPhrasing = new Map<string, Tally>();
const tally = (map: Map<string, Tally>, key: string, kind: string, example: string) => {
  const t = map.get(key) ?? { kind, right: 0, answers: 0, example, wrongCalls: new Map() };
  map.set(key, t);
  return t;
};
for (const [index, trajectories] of [...answers()].sort((a, b) => a[0] - b[0])) {
  const row = rows[index];
  const kind = rowKind(row, `validation row ${index}`);
  const example = (row!.prompt as { content: string }[]).at(-1)!.content;
  const phrasing = Math.floor(index / KINDS) % phrasings;
  const tallies = [
    tally(byKind, kind, kind, example),
    tally(byPhrasing, `${kind} ${phrasing}`, kind, example),
  ];
  for (const traj of trajectories) {
    const { right, wrote } = verdict(traj);
    for (const t of tallies) {
      t.answers += 1;
      if (right) t.right += 1;
      else t.wrongCalls.set(wrote, (t.wrongCalls.get(wrote) ?? 0) + 1);
    }
  }
}

function table(title: string, map: Map<string, Tally>): void {
  process.stdout.write(
    `| ${title} | accuracy | wrong answers called the calculator with | a question |\n|---|---|---|---|\n`,
  );
  for (const t of [...map.values()].sort((a, b) => a.right / a.answers - b.right / b.answers)) {
    const wrong = [...t.wrongCalls]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `\`${k}\` ${n}`)
      .join(', ');
    const pct = ((100 * t.right) / t.answers).toFixed(0);
    process.stdout.write(
      `| \`${t.kind}\` | ${pct}% (${t.right}/${t.answers}) | ${wrong || '-'} | ${t.example} |\n`,
    );
  }
}
table('kind', byKind);
if (phrasings > 1) {
  process.stdout.write('\n');
  table('kind, by phrasing', byPhrasing);
}

/** The training answers' accuracy by kind and by the policy versions that wrote them. */
async function trainingTally(runDir: string): Promise<void> {
  const rows = await readDataset(dataPath);
  const every = Number(values.every);
  const cells = new Map<string, { right: number; answers: number; wrong: Map<string, number> }>();
  const kinds = new Set<string>();
  let last = 0;
  const groupsDir = join(runDir, 'groups');
  for (const file of readdirSync(groupsDir).filter((f) => /^(s\d+-)?e\d+-p\d+\.json$/.test(f))) {
    const group = ScoredGroupSchema.parse(JSON.parse(readFileSync(join(groupsDir, file), 'utf8')));
    const kind = rowKind(rows[Number(/-p(\d+)$/.exec(group.groupId)?.[1])], file);
    kinds.add(kind);
    for (const traj of group.trajectories) {
      const version = Math.max(...traj.policyVersions);
      const bucket = Math.floor(Math.max(version, 0) / every);
      last = Math.max(last, bucket);
      const key = `${kind} ${bucket}`;
      const c = cells.get(key) ?? { right: 0, answers: 0, wrong: new Map() };
      cells.set(key, c);
      const { right, wrote } = verdict(traj);
      c.answers += 1;
      if (right) c.right += 1;
      else c.wrong.set(wrote, (c.wrong.get(wrote) ?? 0) + 1);
    }
  }
  const buckets = Array.from({ length: last + 1 }, (_, b) => b);
  process.stdout.write(
    `| kind | ${buckets.map((b) => `answers of v${b * every}-v${b * every + every - 1}`).join(' | ')} |\n`,
  );
  process.stdout.write(`|---|${buckets.map(() => '---').join('|')}|\n`);
  for (const kind of [...kinds].sort()) {
    const cols = buckets.map((b) => {
      const c = cells.get(`${kind} ${b}`);
      if (!c) return '-';
      const top = [...c.wrong].sort((x, y) => y[1] - x[1])[0];
      return `${((100 * c.right) / c.answers).toFixed(0)}% (${c.right}/${c.answers})${top ? `, wrong: \`${top[0]}\` ${top[1]}` : ''}`;
    });
    process.stdout.write(`| \`${kind}\` | ${cols.join(' | ')} |\n`);
  }
}
