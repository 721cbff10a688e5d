/** The bounds of a step stream's chunk (contract/step-streams.ts), checked alike by both backends before any write. */
import { InvalidInputError } from '../../errors';
import { MAX_STREAM_CHUNK_CHARS, type StepStreamChunk } from '../contract/step-streams';

const whole = (value: number, min: number) => Number.isSafeInteger(value) && value >= min;

export function checkStreamChunk(chunk: StepStreamChunk): void {
  const where = `stream chunk ${chunk.seq} of step ${chunk.step} of run ${JSON.stringify(chunk.runId).slice(0, 200)}`;
  if (!whole(chunk.step, 0)) throw new InvalidInputError(`${where}: step must be a whole number ≥ 0`);
  if (!whole(chunk.attempt, 1)) throw new InvalidInputError(`${where}: attempt must be a whole number ≥ 1`);
  if (!whole(chunk.seq, 0) || chunk.seq > 1_000_000)
    throw new InvalidInputError(`${where}: seq must be a whole number from 0 to 1,000,000`);
  if (typeof chunk.text !== 'string' || chunk.text.length > MAX_STREAM_CHUNK_CHARS)
    throw new InvalidInputError(
      `${where}: text must be a string of at most ${MAX_STREAM_CHUNK_CHARS.toLocaleString('en-US')} characters`,
    );
  if (chunk.text.includes('\u0000')) throw new InvalidInputError(`${where}: text must not contain NUL characters`);
}
