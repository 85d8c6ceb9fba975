// Writes shared/schemas/json/<name>.schema.json, constants.json and the learner's generated Python types
// (run: npm run schemas:generate). A unit test fails when any is stale.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONSTANTS_FILE, EXPORTED, renderConstants, renderJsonSchema } from './json-schemas.ts';
import { PYTHON_MODULES, renderPython } from './python.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const out = join(root, 'shared/schemas/json');
mkdirSync(out, { recursive: true });
for (const name of Object.keys(EXPORTED)) {
  writeFileSync(join(out, `${name}.schema.json`), renderJsonSchema(name));
  console.log(`wrote ${join(out, `${name}.schema.json`)}`);
}
writeFileSync(join(out, CONSTANTS_FILE), renderConstants());
console.log(`wrote ${join(out, CONSTANTS_FILE)}`);
for (const spec of PYTHON_MODULES) {
  writeFileSync(join(root, spec.path), renderPython(spec));
  console.log(`wrote ${join(root, spec.path)}`);
}
