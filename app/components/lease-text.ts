/** A lease's countdown text and tone (classes in globals.css), shared by the server render and the ticker. */

/** 7s, 4m 05s, 2h 10m. */
function span(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export const LEASE_TONES = ['wb-late', 'wb-soon'] as const;

export function leaseState(expiresAt: number, now: number, orphaned: boolean): { text: string; tone: string } {
  const left = expiresAt - now;
  if (left <= 0 || orphaned) return { text: `passed ${span(-left)} ago`, tone: 'wb-late' };
  return { text: `${span(Math.ceil(left))} left`, tone: left < 5 ? 'wb-soon' : '' };
}
