// The benchmark prompt: P ordinary token ids, the same for every engine and run (no tokenizer needed).
export function benchPrompt(length: number, vocabSize: number): number[] {
  const span = Math.min(vocabSize, 50_000) - 1000;
  return Array.from({ length }, (_, i) => 1000 + ((i * 7919) % span));
}
