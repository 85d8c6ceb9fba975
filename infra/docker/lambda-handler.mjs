// The module Lambda's Node runtime loads in the container stages (CMD index.handler). It runs the stage's
// TypeScript handler through tsx, as the CLI and the tests do, so files the code finds next to itself
// through import.meta.url (the sandbox launcher, worker scripts) are where it expects them.
import { register } from 'tsx/esm/api';

const stage = process.env.TOOLRL_STAGE;
if (!stage) throw new Error('TOOLRL_STAGE is not set in the image');
register();
const mod = await import(`./functions/${stage}/index.ts`);
if (typeof mod.handler !== 'function') throw new Error(`functions/${stage}/index.ts exports no handler`);
export const handler = mod.handler;
