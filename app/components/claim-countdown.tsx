'use client';
/**
 * A claim's lease, counted down every second by the browser's clock. Every countdown on the page reads one
 * shared ticker, so a hundred claims cost one timer. The first render uses the server's clock so that the
 * server HTML and hydration agree; the browser's clock takes over right after.
 */
import { useSyncExternalStore } from 'react';

const listeners = new Set<() => void>();
let timer: ReturnType<typeof setInterval> | undefined;
let nowSeconds = Date.now() / 1000;

function subscribe(listener: () => void) {
  listeners.add(listener);
  if (!timer) {
    nowSeconds = Date.now() / 1000;
    timer = setInterval(() => {
      nowSeconds = Date.now() / 1000;
      for (const l of listeners) l();
    }, 1000);
  }
  return () => {
    listeners.delete(listener);
    if (!listeners.size && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/** 7s, 4m 05s, 2h 10m. */
function span(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function ClaimCountdown({ idemKey, expiresAt, serverNow, orphaned }: {
  idemKey: string; expiresAt: number; serverNow: number; orphaned: boolean;
}) {
  const now = useSyncExternalStore(subscribe, () => nowSeconds, () => serverNow);
  const left = expiresAt - now;
  const passed = left <= 0 || orphaned;
  return (
    <span data-testid={`claim-countdown-${idemKey}`} title={new Date(expiresAt * 1000).toISOString()}
      className={`whitespace-nowrap tabular-nums ${passed ? 'wb-late' : left < 5 ? 'wb-soon' : ''}`}>
      {passed ? `passed ${span(-left)} ago` : `${span(Math.ceil(left))} left`}
    </span>
  );
}
