// `toolrl generate`: messages and tools files, the exact --json shape, and clear usage errors (exit 2).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, tinyBundle } from '../../../bench/support/tiny-model.ts';

const exec = promisify(execFile);
const toolrl = (args: string[]) =>
  exec(join(REPO_ROOT, 'bin', 'toolrl.mjs'), ['generate', ...args], {
    cwd: REPO_ROOT,
    maxBuffer: 16 << 20,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );

let bundleDir: string;
let dir: string;
beforeAll(async () => {
  ({ bundleDir } = await tinyBundle());
  dir = mkdtempSync(join(tmpdir(), 'toolrl-generate-'));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('toolrl generate', () => {
  it('renders --messages with --tools through the chat template and samples G reproducible completions', async () => {
    const messages = join(dir, 'messages.yaml');
    writeFileSync(
      messages,
      'messages:\n  - role: system\n    content: Be brief.\n  - role: user\n    content: Add 2 and 3.\n',
    );
    const tools = join(dir, 'tools.json');
    writeFileSync(
      tools,
      JSON.stringify([{ type: 'function', function: { name: 'add', description: 'a + b', parameters: {} } }]),
    );
    const args = [
      '--policy',
      bundleDir,
      '--messages',
      messages,
      '--tools',
      tools,
      '--n',
      '3',
      '--max-new-tokens',
      '8',
      '--seed',
      '4',
      '--threads',
      '1',
      '--json',
    ];
    const a = await toolrl(args);
    expect(a.code).toBe(0);
    const out = JSON.parse(a.stdout) as { prompt_token_ids: number[]; samples: { token_ids: number[] }[] };
    expect(out.samples).toHaveLength(3);
    expect(out.samples.every((s) => s.token_ids.length >= 1 && s.token_ids.length <= 8)).toBe(true);
    // The tool schema and the system prompt are in the prompt: it is longer than without --tools.
    const bare = JSON.parse(
      (await toolrl(args.filter((x, i) => x !== tools && args[i + 1] !== tools))).stdout,
    );
    expect(out.prompt_token_ids.length).toBeGreaterThan(bare.prompt_token_ids.length);
    expect((await toolrl(args)).stdout).toBe(a.stdout);
  });

  it.each([
    [['--prompt', 'hi', '--messages', 'x.json'], /exactly one of --prompt TEXT or --messages FILE/],
    [['--prompt', 'hi', '--n', 'two'], /--n must be an integer, got "two"/],
    [['--prompt', 'hi', '--temperature', '-1'], /temperature must be >= 0/],
    [['--messages', '/nonexistent.json'], /cannot read \/nonexistent.json/],
  ])('rejects %j with exit 2', async (args, message) => {
    const r = await toolrl(['--policy', bundleDir, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it('names the bad message in a messages file', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(
      bad,
      JSON.stringify([
        { role: 'user', content: 'hi' },
        { role: 'robot', content: 'x' },
      ]),
    );
    const r = await toolrl(['--policy', bundleDir, '--messages', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad.json: messages\[1.role\]/);
  });

  it('says when the folder is not a bundle', async () => {
    const r = await toolrl(['--policy', dir, '--prompt', 'hi']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/is neither a rollout bundle \(manifest.json \+ model.onnx\), a checkpoint/);
  });
});
