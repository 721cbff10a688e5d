/**
 * A claim's lease, counted down every second by the browser's clock. Rendered on the server (its clock, so
 * the HTML and hydration agree) as plain text carrying its expiry; one CountdownTicker per page then moves
 * every countdown on it. A client component per row sent each row's props twice and hydrated fifty of them.
 */
import { leaseState } from './lease-text';
import { isoTime } from './time';

export function ClaimCountdown({
  idemKey,
  expiresAt,
  serverNow,
  orphaned,
}: {
  idemKey: string;
  expiresAt: number;
  serverNow: number;
  orphaned: boolean;
}) {
  const { text, tone } = leaseState(expiresAt, serverNow, orphaned);
  return (
    <span
      data-testid={`claim-countdown-${idemKey}`}
      title={isoTime(expiresAt)}
      data-lease-expires={expiresAt}
      data-orphaned={orphaned ? '' : undefined}
      className={`whitespace-nowrap tabular-nums ${tone}`}
    >
      {text}
    </span>
  );
}
