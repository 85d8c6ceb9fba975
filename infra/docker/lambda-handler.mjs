// The module Lambda's Node runtime loads in the container images. An image copies this file once per function it
// serves, named after that function (tool-call.mjs, reward.mjs), and each function's command names its copy
// (CMD ["tool-call.handler"], or the function's own ImageConfig command), so one image can serve several functions.
// It runs functions/<name>/index.ts through tsx, as the CLI and the tests do, so files the code finds next to
// itself through import.meta.url (the sandbox launcher, worker scripts, the BFCL package) are where it expects them.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

const stage = basename(fileURLToPath(import.meta.url), '.mjs');
const entry = new URL(`./functions/${stage}/index.ts`, import.meta.url);
if (!existsSync(entry))
  throw new Error(
    `${fileURLToPath(entry)} does not exist: the image must copy lambda-handler.mjs as <function>.mjs`,
  );
register();
const mod = await import(entry.href);
if (typeof mod.handler !== 'function') throw new Error(`functions/${stage}/index.ts exports no handler`);
export const handler = mod.handler;
