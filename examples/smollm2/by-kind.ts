// Accuracy by kind of question (the expression's operators, one held-out phrasing each in val.parquet) from the
// answers `toolrl eval --out DIR` kept, with the expressions the wrong answers sent to the calculator:
//   npx toolrl eval --policy runs/<runId>/policy/v24 --data examples/smollm2/data/val.parquet --out /tmp/v24
//   npx tsx examples/smollm2/by-kind.ts /tmp/v24 [examples/smollm2/data/val.parquet]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDataset } from '#shared/data/dataset';
import { ScoredGroupSchema } from '#shared/schemas/scored-group';

const [dir, dataPath = join(import.meta.dirname, 'data', 'val.parquet')] = process.argv.slice(2);
if (!dir) {
  process.stderr.write('usage: npx tsx examples/smollm2/by-kind.ts EVAL_OUT_DIR [VAL.parquet]\n');
  process.exit(2);
}
const runs = readdirSync(join(dir, 'runs'));
if (runs.length !== 1) throw new Error(`${dir}/runs should hold one evaluation, found ${runs.length}`);
const groupsDir = join(dir, 'runs', runs[0]!, 'groups');
const rows = await readDataset(dataPath);

/** `a + b - c` -> `+-`: the kind of question, whatever its numbers. */
const kindOf = (expr: string) => expr.replace(/[^-+*/]/g, '') || '(none)';

interface Tally {
  right: number;
  answers: number;
  example: string;
  wrongCalls: Map<string, number>;
}
const byKind = new Map<string, Tally>();
for (const file of readdirSync(groupsDir).sort()) {
  const group = ScoredGroupSchema.parse(JSON.parse(readFileSync(join(groupsDir, file), 'utf8')));
  const index = Number(/-p(\d+)$/.exec(group.groupId)?.[1]);
  const row = rows[index];
  const expr = String((row?.extra_info as { expression?: unknown } | undefined)?.expression ?? '');
  if (!row || !expr) throw new Error(`${file}: no row ${index} with extra_info.expression in ${dataPath}`);
  const kind = kindOf(expr);
  const t = byKind.get(kind) ?? {
    right: 0,
    answers: 0,
    example: (row.prompt as { content: string }[]).at(-1)!.content,
    wrongCalls: new Map(),
  };
  for (const traj of group.trajectories) {
    t.answers += 1;
    // The reward's own verdict on the final answer (the toolcall reward's component; 1 = the right number).
    const right = (traj.rewardComponents['toolcall/final_answer'] ?? 0) > 0.5;
    if (right) t.right += 1;
    else {
      const call = traj.turns.flatMap((u) => u.toolCalls)[0];
      const wrote = call
        ? kindOf(String((call.arguments as { expression?: unknown }).expression ?? ''))
        : 'no call';
      t.wrongCalls.set(wrote, (t.wrongCalls.get(wrote) ?? 0) + 1);
    }
  }
  byKind.set(kind, t);
}

process.stdout.write(
  '| kind | accuracy | wrong answers called the calculator with | a question of this kind |\n',
);
process.stdout.write('|---|---|---|---|\n');
for (const [kind, t] of [...byKind].sort((a, b) => a[1].right / a[1].answers - b[1].right / b[1].answers)) {
  const wrong = [...t.wrongCalls]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `\`${k}\` ${n}`)
    .join(', ');
  const pct = ((100 * t.right) / t.answers).toFixed(0);
  process.stdout.write(
    `| \`${kind}\` | ${pct}% (${t.right}/${t.answers}) | ${wrong || '-'} | ${t.example} |\n`,
  );
}
