'use client';
/**
 * The step the run is retrying, in the live claim card: "attempt 3 of 10, next in 2.1 s, last error …",
 * counting down by the browser's clock every 100 ms. The server renders the same words at its own now, so the
 * HTML and hydration agree; the live refresh brings the next attempt's line when there is one.
 */
import { useEffect, useState } from 'react';
import type { StepInFlight } from '@/lib/data/step-in-flight';

export function inFlightText(s: StepInFlight, nowMs: number): string {
  const of = `attempt ${s.attempt} of ${s.maxAttempts}`;
  if (s.running) return `attempt ${s.attempt + 1} of ${s.maxAttempts} running; attempt ${s.attempt} failed`;
  const left = (s.retryAt ?? nowMs) - nowMs;
  return left > 0 ? `${of} failed, next in ${(left / 1000).toFixed(1)} s` : `${of} failed, next attempt due now`;
}

export function StepInFlightLine({ step, serverNowMs }: { step: StepInFlight; serverNowMs: number }) {
  const [now, setNow] = useState(serverNowMs);
  useEffect(() => {
    if (step.running || step.retryAt === null) return;
    const tick = () => setNow(Date.now());
    tick();
    const timer = setInterval(tick, 100);
    return () => clearInterval(timer);
  }, [step.running, step.retryAt]);
  return (
    <div
      data-testid="step-in-flight"
      className="mb-3 rounded-md border border-amber-200 bg-amber-50 px-3 py-2 text-sm text-amber-900 dark:border-amber-900 dark:bg-amber-950/40 dark:text-amber-200"
    >
      <p>
        <span className="font-medium">Step {step.step ?? step.key}</span>
        {': '}
        <span data-testid="step-in-flight-attempt" className="tabular-nums">
          {inFlightText(step, now)}
        </span>
      </p>
      <p className="mt-1 break-words font-mono text-xs" data-testid="step-in-flight-error" title={step.lastError}>
        last error: {step.lastError.length > 300 ? `${step.lastError.slice(0, 300)}…` : step.lastError}
      </p>
    </div>
  );
}
