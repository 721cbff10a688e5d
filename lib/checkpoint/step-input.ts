/**
 * A step's input as recorded beside its result (`ctx.step(name, fn, { input })`, runAgent's item): bounded,
 * because it is written with every commit and shown on the step page. Recording never fails a step: a value
 * that cannot be serialized (a cycle, a BigInt, nesting that overflows the stack) is recorded as a note.
 */

/** The most characters of input JSON stored; a longer one keeps its head and says how long it was. */
export const INPUT_MAX_CHARS = 16_384;
const HEAD_CHARS = 2_048;

export function recordedInput(input: unknown): string | null {
  if (input === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch (error) {
    return JSON.stringify({
      $unrecorded: `the input could not be serialized as JSON: ${(error as Error).message}`.slice(0, 300),
    });
  }
  if (text === undefined) return null;
  if (text.length <= INPUT_MAX_CHARS) return text;
  return JSON.stringify({
    $truncated: `${text.length.toLocaleString('en-US')} characters of JSON, more than the ${INPUT_MAX_CHARS.toLocaleString('en-US')} recorded`,
    head: text.slice(0, HEAD_CHARS),
  });
}
