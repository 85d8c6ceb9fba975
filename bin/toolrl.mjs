#!/usr/bin/env node
// The `toolrl` command. The CLI is TypeScript, loaded through tsx's ESM hooks (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../shared/cli/main.ts');
