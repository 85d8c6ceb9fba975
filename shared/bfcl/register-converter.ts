// Adds BFCL's dataset converter (`--from bfcl`) to the converters (data/ cannot import the slice above it).
import { registerConverter } from '../data/converters/index.ts';
import { bfclConverter } from './converter.ts';

registerConverter(bfclConverter);
