// Records test/fixtures/tokenizer-parity/expected.json from the tokenizer code as it is now. Only on purpose
// (the point of the file is that it does not change): `npx tsx test/helpers/record-tokenizer-parity.ts`.
import { writeFileSync } from 'node:fs';
import { EXPECTED_PATH, formatCases, runCorpus } from './tokenizer-corpus.ts';

const cases = await runCorpus();
writeFileSync(EXPECTED_PATH, formatCases(cases));
console.log(`wrote ${cases.length} cases to ${EXPECTED_PATH}`);
