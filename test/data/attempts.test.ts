/**
 * Attempts read as data: the step page's attempts (lib/control/steps attemptsOf) and the run page's in-flight
 * line (lib/data/step-in-flight) from the events' attempt, max_attempts, retry_at and previous_* columns, and
 * the same from rows written before those columns existed, read from their text. Pure functions over rows.
 */
import { describe, expect, it } from 'vitest';
import { attemptsOf } from '../../lib/control/steps';
import { stepInFlight } from '../../lib/data/step-in-flight';
import { eventText } from '../../lib/engine/attempt-note';
import type { CommittedRow, StepEvent } from '../../lib/store/contract';

let id = 1;
const event = (e: Partial<StepEvent> & Pick<StepEvent, 'outcome' | 'at'>): StepEvent => ({
  id: id++,
  runId: 'r',
  idemKey: 'r:step:3',
  step: 3,
  count: 1,
  durationMs: 100,
  workerId: 'W1',
  detail: null,
  attempt: null,
  maxAttempts: null,
  retryAt: null,
  previousWorkerId: null,
  previousAttempt: null,
  ...e,
});
const committed: CommittedRow = {
  idemKey: 'r:step:3',
  runId: 'r',
  resultJson: '1',
  committedAt: 200,
  step: 3,
  fingerprint: null,
  workerId: 'W2',
  durationMs: 50,
  source: 'executed',
  forkedFrom: null,
  inputJson: null,
  priorStep: 3,
  priorStateJson: '{}',
};
const record = (events: StepEvent[], row: CommittedRow | null = committed) => ({
  committed: row,
  history: [],
  events,
  claim: null,
});

describe('attempts as data', () => {
  it('numbers each attempt from the columns; a takeover is the lost attempt, naming who took it over', () => {
    const attempts = attemptsOf(
      record([
        event({ outcome: 'failed', at: 100, detail: 'Error: 503', attempt: 1, maxAttempts: 10, retryAt: 102.5 }),
        event({ outcome: 'expired', at: 150, workerId: 'W2', attempt: 3, previousWorkerId: 'W1', previousAttempt: 2 }),
        event({ outcome: 'lease_lost', at: 160, workerId: 'W1', attempt: 2, detail: 'lease lost' }),
      ]),
      30_000,
      300,
    );
    expect(attempts.map((a) => [a.outcome, a.attempt, a.maxAttempts, a.retryAt, a.workerId, a.error])).toEqual([
      ['failed', 1, 10, 102.5, 'W1', 'Error: 503'],
      ['taken_over', 2, null, null, 'W1', 'lease of W1 (attempt 2) passed; taken over by W2 (attempt 3)'],
      ['lease_lost', 2, null, null, 'W1', 'lease lost'],
      // The committing attempt wrote nothing of its own: it is the takeover's.
      ['committed', 3, null, null, 'W2', null],
    ]);
    expect(attempts[1]!.takenOverBy).toEqual({ workerId: 'W2', attempt: 3 });
  });

  it('reads rows written before the columns from their text, and numbers nothing it cannot know', () => {
    const attempts = attemptsOf(
      record([
        event({
          outcome: 'failed',
          at: 100,
          detail: 'Error: 503\nattempt 1 of 4 · retry due 1970-01-01T00:01:42.500Z',
        }),
        event({ outcome: 'expired', at: 150, workerId: 'W2', detail: 'lease of W1 passed; taken over' }),
      ]),
      30_000,
      300,
    );
    expect(attempts.map((a) => [a.outcome, a.attempt, a.maxAttempts, a.retryAt, a.error])).toEqual([
      ['failed', 1, 4, 102.5, 'Error: 503'],
      ['taken_over', null, null, null, 'lease of W1 passed; taken over'],
      ['committed', null, null, null, null],
    ]);
  });

  it('a first attempt that succeeds is its committed row alone: attempt 1', () => {
    expect(attemptsOf(record([]), 30_000, 300).map((a) => [a.outcome, a.attempt])).toEqual([['committed', 1]]);
  });

  it("the run page's in-flight line: from the columns, else the text; none once the step committed", () => {
    const failed = event({
      outcome: 'failed',
      at: 100,
      detail: 'Error: 503',
      attempt: 3,
      maxAttempts: 10,
      retryAt: 102.1,
    });
    expect(stepInFlight({ status: 'running' }, failed, [], false)).toEqual({
      key: 'r:step:3',
      step: 3,
      attempt: 3,
      maxAttempts: 10,
      retryAt: 102_100,
      running: false,
      lastError: 'Error: 503',
    });
    const old = event({
      outcome: 'failed',
      at: 100,
      detail: 'Error: 503\nattempt 3 of 10 · retry due 1970-01-01T00:01:42.100Z',
    });
    expect(stepInFlight({ status: 'running' }, old, [{ idemKey: 'r:step:3' }], false)).toMatchObject({
      attempt: 3,
      maxAttempts: 10,
      retryAt: 102_100,
      running: true,
      lastError: 'Error: 503',
    });
    // No retry to come (spent, or not retryable), a committed step, a run not running: nothing in flight.
    expect(stepInFlight({ status: 'running' }, { ...failed, retryAt: null }, [], false)).toBeNull();
    expect(stepInFlight({ status: 'running' }, failed, [], true)).toBeNull();
    expect(stepInFlight({ status: 'paused' }, failed, [], false)).toBeNull();
  });

  it('the timeline and the CLI show the columns in words', () => {
    expect(
      eventText(event({ outcome: 'failed', at: 1, detail: 'Error: 503', attempt: 10, maxAttempts: 10, retryAt: null })),
    ).toBe('Error: 503\nattempt 10 of 10 · no retry: attempts spent');
    expect(
      eventText(
        event({ outcome: 'failed', at: 1, detail: 'NonRetryableError: no', attempt: 1, maxAttempts: 5, retryAt: null }),
      ),
    ).toBe('NonRetryableError: no\nattempt 1 of 5 · no retry: NonRetryableError');
    expect(
      eventText(event({ outcome: 'failed', at: 1, detail: 'Error: x', attempt: 2, maxAttempts: 5, retryAt: 3 })),
    ).toBe('Error: x\nattempt 2 of 5 · retry due 1970-01-01T00:00:03.000Z');
    expect(
      eventText(
        event({ outcome: 'expired', at: 1, workerId: null, attempt: 2, previousWorkerId: null, previousAttempt: 1 }),
      ),
    ).toBe('lease of an outside client (attempt 1) passed; taken over by an outside client (attempt 2)');
    // A holder declared dead is said so, by the words the store wrote of that holder.
    const dead = {
      outcome: 'expired' as const,
      at: 1,
      workerId: 'W2',
      attempt: 3,
      previousWorkerId: 'W1',
      previousAttempt: 2,
    };
    expect(eventText(event({ ...dead, detail: 'worker W1 was declared dead; taken over' }))).toBe(
      'worker W1 (attempt 2) was declared dead; taken over by W2 (attempt 3)',
    );
    expect(eventText(event({ ...dead, detail: 'lease of W1 passed; taken over' }))).toBe(
      'lease of W1 (attempt 2) passed; taken over by W2 (attempt 3)',
    );
    expect(
      eventText(event({ outcome: 'expired', at: 1, detail: 'expired by ops: the step will run again', attempt: 1 })),
    ).toBe('expired by ops: the step will run again');
  });
});
