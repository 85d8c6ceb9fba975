#!/usr/bin/env node
// Slims a production node_modules for a Lambda container image: onnxruntime-node keeps only its Linux
// binary for the image's architecture (it ships macOS, Windows and both Linux builds, ~240 MB of them
// unused), and packages only the CDK app needs are dropped. Fails if the binary the image needs is missing.
//   node infra/docker/prune-node-modules.mjs NODE_MODULES --arch x64|arm64
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** Needed by `cdk synth` only; no stage imports them. */
const DEPLOY_ONLY = ['aws-cdk-lib', 'constructs', 'cdk-nag', 'aws-cdk'];

function usage(message) {
  process.stderr.write(
    `prune-node-modules: ${message}\nusage: prune-node-modules.mjs NODE_MODULES --arch x64|arm64\n`,
  );
  process.exit(2);
}

const [dir, flag, arch] = process.argv.slice(2);
if (!dir || flag !== '--arch' || !['x64', 'arm64'].includes(arch ?? '')) usage('bad arguments');
if (!existsSync(dir)) usage(`${dir} does not exist`);

let removed = 0;
const remove = (path) => {
  if (!existsSync(path)) return;
  rmSync(path, { recursive: true, force: true });
  removed++;
  process.stdout.write(`removed ${path}\n`);
};

const ortBin = join(dir, 'onnxruntime-node', 'bin');
if (!existsSync(ortBin)) usage(`${ortBin} is missing: is onnxruntime-node installed?`);
for (const napi of readdirSync(ortBin)) {
  for (const platform of readdirSync(join(ortBin, napi))) {
    if (platform !== 'linux') {
      remove(join(ortBin, napi, platform));
      continue;
    }
    for (const a of readdirSync(join(ortBin, napi, platform)))
      if (a !== arch) remove(join(ortBin, napi, platform, a));
  }
}
const kept = readdirSync(ortBin).filter((napi) =>
  existsSync(join(ortBin, napi, 'linux', arch, 'onnxruntime_binding.node')),
);
if (kept.length === 0) {
  process.stderr.write(`prune-node-modules: no onnxruntime-node binding for linux/${arch} under ${ortBin}\n`);
  process.exit(1);
}
for (const name of DEPLOY_ONLY) remove(join(dir, name));
process.stdout.write(`kept onnxruntime-node linux/${arch} (${kept.join(', ')}); removed ${removed} paths\n`);
