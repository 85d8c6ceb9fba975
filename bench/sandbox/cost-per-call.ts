// Cost of one built-in sandbox call against a bare `python3 -c` spawn of the same interpreter, timed
// in the same process with the runs interleaved (ABCABC...) so load on the machine hits all alike.
// Usage: npx tsx bench/sandbox/cost-per-call.ts [rounds]   (default 40)
import { spawn } from 'node:child_process';
import { findPython } from '#shared/tools/code/isolation';
import { PythonSandbox } from '#shared/tools/code/sandbox';

const rounds = Number(process.argv[2] ?? 40);
const CODE = 'import math\nprint(math.comb(10, 3))';
const python = findPython().executable;

function bareSpawn(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-c', CODE], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 && out === '120\n' ? resolve() : reject(new Error(`bare spawn failed: ${code}`)),
    );
  });
}

const boxes = {
  bwrap: new PythonSandbox({ isolation: 'bwrap' }),
  process: new PythonSandbox({ isolation: 'process' }),
};

async function sandboxCall(box: PythonSandbox): Promise<void> {
  const r = await box.run({ code: CODE });
  if (r.stdout !== '120\n' || r.exitCode !== 0) throw new Error(`sandbox run failed: ${JSON.stringify(r)}`);
}

const cases: Record<string, () => Promise<void>> = {
  'bare python3 -c': bareSpawn,
  'sandbox (bwrap)': () => sandboxCall(boxes.bwrap),
  'sandbox (process)': () => sandboxCall(boxes.process),
};
const times: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));

for (const fn of Object.values(cases)) await fn(); // warm-up: page cache, bwrap probe
for (let i = 0; i < rounds; i++) {
  for (const [name, fn] of Object.entries(cases)) {
    const t0 = performance.now();
    await fn();
    times[name]!.push(performance.now() - t0);
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const base = median(times['bare python3 -c']!);
console.log(`${rounds} rounds, ${python}`);
console.log('case                 median ms   p90 ms   ratio to bare');
for (const [name, xs] of Object.entries(times)) {
  const p90 = [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)]!;
  console.log(
    `${name.padEnd(20)} ${median(xs).toFixed(1).padStart(9)} ${p90.toFixed(1).padStart(8)}   ${(median(xs) / base).toFixed(2)}x`,
  );
}
