// New run ids (embedded `toolrl train` and `toolrl submit` share one slug rule) always pass RunIdSchema.
import { describe, expect, it } from 'vitest';
import { newRunId, RunIdSchema } from '#shared/schemas/messages/run-event';

const now = new Date('2025-01-01T12:00:00.123Z');

describe('newRunId', () => {
  it("is the config's name as a slug, the UTC time and the optional suffix", () => {
    expect(newRunId('Calc GRPO (v2)', now)).toBe('calc-grpo-v2-20250101-120000');
    expect(newRunId('calc-grpo', now, '3f9a')).toBe('calc-grpo-20250101-120000-3f9a');
  });

  it('is a valid run id for any name', () => {
    for (const name of [
      '_hidden',
      '...',
      '',
      'ä/ö',
      `${'x'.repeat(95)}_-y${'z'.repeat(40)}`,
      'a'.repeat(500),
    ]) {
      const id = newRunId(name, now, 'ffff');
      expect(RunIdSchema.safeParse(id).success, id).toBe(true);
    }
    expect(newRunId('_hidden', now)).toBe('hidden-20250101-120000');
    expect(newRunId('...', now)).toBe('run-20250101-120000');
    expect(newRunId(`${'x'.repeat(95)}_-y`, now)).toBe(`${'x'.repeat(95)}-20250101-120000`);
  });
});
