// Adds BFCL's dataset converter (`--from bfcl`) to the converters (data/ cannot import the slice above it).
import { registerConverter } from '#shared/data/converters/index';
import { bfclConverter } from './converter.ts';

registerConverter(bfclConverter);
