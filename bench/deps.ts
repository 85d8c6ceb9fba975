// What tokenization costs the product to install and to load: transformers.js (what it used, 4.3.1) against
// @huggingface/tokenizers + @huggingface/jinja (what it uses: the two libraries transformers.js bundles), measured
// in the same run. Run: npx tsx bench/deps.ts [--rounds 7]
//   install size: the apparent bytes and files of each one's dependency closure as installed in node_modules
//                 (optional packages count where npm installed them, i.e. sharp's binaries for this platform),
//                 and of the production closure (package.json "dependencies") with and without transformers.js;
//   load time:    a fresh `node` per measurement, rounds alternating which goes first; each child times its own
//                 import (and, for the end-to-end row, loading the tiny model's tokenizer, rendering a prompt with
//                 tools and encoding it) from after Node's start-up, and reports its resident memory after.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from './support/tiny-model.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const ROUNDS = Number(values.rounds);
const NODE_MODULES = join(REPO_ROOT, 'node_modules');
const TINY = join(REPO_ROOT, 'test', 'fixtures', 'tokenizer-parity', 'tiny');

interface Manifest {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/** Where `name` resolves from the package at `from` (its own node_modules, then each one above). */
function resolvePackage(name: string, from: string): string | undefined {
  for (let dir = from; dir.startsWith(REPO_ROOT); dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === REPO_ROOT) break;
  }
  return undefined;
}

/** The package folders `roots` need at run time (dependencies and the optional ones installed here). */
function closure(roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const visit = (dir: string) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const m = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;
    for (const name of Object.keys({ ...m.dependencies, ...m.optionalDependencies })) {
      const dep = resolvePackage(name, dir);
      if (dep) visit(dep);
    }
  };
  for (const root of roots) {
    const dir = resolvePackage(root, REPO_ROOT);
    if (!dir) throw new Error(`${root} is not installed; run npm ci`);
    visit(dir);
  }
  return seen;
}

/** Apparent bytes and file count of a package folder, its nested node_modules left to their own entries. */
function folderSize(dir: string): { bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else {
        bytes += lstatSync(p).size;
        files++;
      }
    }
  };
  walk(dir);
  return { bytes, files };
}

function size(pkgs: Set<string>): { packages: number; bytes: number; files: number } {
  let bytes = 0;
  let files = 0;
  for (const dir of pkgs) {
    const s = folderSize(dir);
    bytes += s.bytes;
    files += s.files;
  }
  return { packages: pkgs.size, bytes, files };
}

const mb = (b: number) => `${(b / 1e6).toFixed(1)} MB`;

const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as Manifest;
const prodRoots = Object.keys(pkg.dependencies ?? {}).filter((n) => n !== '@huggingface/transformers');
const before = closure(['@huggingface/transformers']);
const after = closure(['@huggingface/tokenizers', '@huggingface/jinja']);
const prodAfter = closure(prodRoots);
const prodBefore = closure([...prodRoots, '@huggingface/transformers']);
const added = new Set([...prodBefore].filter((d) => !prodAfter.has(d)));

console.log('Install size (apparent bytes of each dependency closure in node_modules):');
for (const [label, set] of [
  ['transformers.js 4.3.1 and its dependencies', before],
  ['@huggingface/tokenizers 0.2.0 + @huggingface/jinja 0.5.10', after],
  ['production dependencies with transformers.js (before)', prodBefore],
  ['production dependencies without it (after)', prodAfter],
  ['what transformers.js added to production', added],
] as const) {
  const s = size(set);
  console.log(`  ${label}: ${mb(s.bytes)}, ${s.files} files, ${s.packages} packages`);
}
console.log(
  `  packages transformers.js added: ${[...added]
    .map((d) => d.slice(NODE_MODULES.length + 1))
    .sort()
    .join(', ')}`,
);

// Each child prints {ms, rss}; the clock starts after Node's own start-up, at the child's first line.
const CHILDREN = {
  importBefore: `const t0 = performance.now();
await import('@huggingface/transformers');`,
  importAfter: `const t0 = performance.now();
await Promise.all([import('@huggingface/tokenizers'), import('@huggingface/jinja')]);`,
  firstPromptBefore: `const t0 = performance.now();
const { readFileSync } = await import('node:fs');
const { Qwen2Tokenizer } = await import('@huggingface/transformers');
const json = JSON.parse(readFileSync(${JSON.stringify(join(TINY, 'tokenizer.json'))}, 'utf8'));
const config = JSON.parse(readFileSync(${JSON.stringify(join(TINY, 'tokenizer_config.json'))}, 'utf8'));
const tok = new Qwen2Tokenizer(json, config);
const text = tok.apply_chat_template(MESSAGES, { tools: TOOLS, add_generation_prompt: true, tokenize: false });
if (tok.encode(text, { add_special_tokens: false }).length < 10) throw new Error('no tokens');`,
  firstPromptAfter: `const t0 = performance.now();
const { readFileSync } = await import('node:fs');
const [{ Tokenizer }, { Template }] = await Promise.all([import('@huggingface/tokenizers'), import('@huggingface/jinja')]);
const json = JSON.parse(readFileSync(${JSON.stringify(join(TINY, 'tokenizer.json'))}, 'utf8'));
const config = JSON.parse(readFileSync(${JSON.stringify(join(TINY, 'tokenizer_config.json'))}, 'utf8'));
const tok = new Tokenizer(json, config);
const text = new Template(config.chat_template).render({ messages: MESSAGES, tools: TOOLS, add_generation_prompt: true, eos_token: config.eos_token });
if (tok.encode(text, { add_special_tokens: false }).ids.length < 10) throw new Error('no tokens');`,
} as const;
const PRELUDE = `const MESSAGES = [{ role: 'user', content: 'What is 347 plus 281?' }];
const TOOLS = [{ type: 'function', function: { name: 'calculator', description: 'Evaluate an arithmetic expression.',
  parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } } }];`;
const EPILOGUE = `console.log(JSON.stringify({ ms: performance.now() - t0, rss: process.memoryUsage().rss }));`;

function child(name: keyof typeof CHILDREN): { ms: number; rss: number } {
  const code = `${PRELUDE}\n${CHILDREN[name]}\n${EPILOGUE}`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  return JSON.parse(out.trim().split('\n').at(-1)!) as { ms: number; rss: number };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const range = (xs: number[], digits = 0) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`;

console.log(`\nLoad time, ${ROUNDS} rounds, fresh node ${process.version} per measurement (median, range):`);
for (const [label, b, a] of [
  ['import', 'importBefore', 'importAfter'],
  ['import + load tiny tokenizer + render + encode one prompt', 'firstPromptBefore', 'firstPromptAfter'],
] as const) {
  const rows: { before: { ms: number; rss: number }; after: { ms: number; rss: number } }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      const before = child(b);
      rows.push({ before, after: child(a) });
    } else {
      const after = child(a);
      rows.push({ before: child(b), after });
    }
  }
  const ratios = rows.map((x) => x.before.ms / x.after.ms);
  console.log(`  ${label}:`);
  console.log(
    `    transformers.js: ${range(rows.map((x) => x.before.ms))} ms, RSS ${range(rows.map((x) => x.before.rss / 1e6))} MB`,
  );
  console.log(
    `    tokenizers + jinja: ${range(rows.map((x) => x.after.ms))} ms, RSS ${range(rows.map((x) => x.after.rss / 1e6))} MB`,
  );
  console.log(`    ratio (transformers.js / tokenizers + jinja, per round): ${range(ratios, 1)}x`);
}
