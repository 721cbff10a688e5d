/** A step's recorded input is bounded and never fails the step (lib/checkpoint/step-input.ts). */
import { describe, expect, it } from 'vitest';
import { INPUT_MAX_CHARS, recordedInput } from '../../lib/checkpoint/step-input';

describe('recordedInput', () => {
  it('keeps small JSON as is, cuts long JSON to a note with its head, and notes what cannot be serialized', () => {
    expect(recordedInput(undefined)).toBeNull();
    expect(recordedInput({ prompt: 'hi', n: 3 })).toBe('{"prompt":"hi","n":3}');
    const long = JSON.parse(recordedInput('x'.repeat(INPUT_MAX_CHARS)) as string) as {
      $truncated: string;
      head: string;
    };
    expect(long.$truncated).toBe('16,386 characters of JSON, more than the 16,384 recorded');
    expect(long.head).toHaveLength(2048);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(JSON.parse(recordedInput(cycle) as string)).toEqual({
      $unrecorded: expect.stringContaining('could not be serialized as JSON'),
    });
    expect(JSON.parse(recordedInput(10n) as string)).toEqual({ $unrecorded: expect.stringContaining('BigInt') });
  });
});
