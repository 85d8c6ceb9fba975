// Adds BFCL's tool kind to the built-in kinds (tools/ cannot import the slice above it). Loads what tools/kinds.ts
// loaded when it named the kind itself, no more: a command that only resolves tools stays as light as before.
import { registerToolKind } from '#shared/tools/kinds';
import { bfclKind } from './tool.ts';

registerToolKind(bfclKind);
