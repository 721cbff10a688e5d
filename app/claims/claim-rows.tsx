'use client';
/**
 * The claims table's rows. A client component fed the claims as data: rendered as server components, each
 * row's element tree travelled in the RSC payload besides its HTML (about 2 KiB a row, fifty rows, every
 * two-second refresh); as props a claim is a couple of hundred bytes. The row's ClaimActions and countdown
 * are then plain parts of this one component rather than fifty client boundaries. Text only, as before.
 */
import Link from 'next/link';
import { ClaimActions } from '@/app/components/claim-actions';
import { ClaimCountdown } from '@/app/components/claim-countdown';
import { Badge, relative } from '@/app/components/ui';
import type { ClaimView } from '@/lib/data/claims';

/**
 * What a row shows and nothing else: the claim's fencing token, for one, stays on the server (a viewer's
 * browser has no use for it).
 */
export type ClaimRowView = Pick<
  ClaimView,
  | 'idemKey'
  | 'runId'
  | 'step'
  | 'attempt'
  | 'workerId'
  | 'heartbeatAge'
  | 'workerAlive'
  | 'expiresAt'
  | 'orphaned'
  | 'outsideClient'
>;

/** Who holds a claim that names no worker: an outside client's row, or a lease taken over the protocol. */
const holderText = (claim: ClaimRowView) => (claim.outsideClient ? 'outside client' : 'protocol client');

// Short class names from globals.css, repeated on every row.
const td = 'wb-td-top';
const link = 'wb-link';

/**
 * A key with break opportunities after its separators, so `run:step:12` wraps at a colon, not mid-word.
 * Text and <wbr> only: a span around each part was three more elements a row to render twice.
 */
function breakable(key: string) {
  // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one key never reorder
  return key.split(/(?<=:)/).flatMap((part, i) => (i > 0 ? [<wbr key={i} />, part] : [part]));
}

export function ClaimRows({ claims, now, operator }: { claims: ClaimRowView[]; now: number; operator: boolean }) {
  return claims.map((claim) => <ClaimTableRow key={claim.idemKey} claim={claim} now={now} operator={operator} />);
}

function ClaimTableRow({ claim, now, operator }: { claim: ClaimRowView; now: number; operator: boolean }) {
  const k = claim.idemKey;
  return (
    <tr data-testid={`claim-row-${k}`} className={claim.orphaned ? 'wb-row-doubt' : undefined}>
      <td className={`${td} min-w-56 max-w-80 wb-mono-wrap`}>
        {breakable(k)}
        {/* On a phone the State column is a scroll away: say here already that this one needs a decision. */}
        {claim.orphaned && (
          <div className="mt-1.5 font-sans md:hidden">
            <Badge value="orphaned" />
          </div>
        )}
      </td>
      <td className={`${td} min-w-40 max-w-64 wrap-anywhere`}>
        <Link prefetch={false} href={`/runs/${encodeURIComponent(claim.runId)}`} className={link}>
          {claim.runId}
        </Link>
      </td>
      <td className={`${td} text-right tabular-nums`}>{claim.step ?? '—'}</td>
      <td className={`${td} text-right tabular-nums`}>{claim.attempt}</td>
      <td className={`${td} min-w-28 max-w-48`}>
        {claim.workerId ? (
          <span className="wb-mono-wrap">{claim.workerId}</span>
        ) : (
          <span data-testid={`claim-holder-${k}`} className="whitespace-nowrap wb-quiet">
            {holderText(claim)}
          </span>
        )}
      </td>
      <td className={`${td} min-w-32`}>
        {claim.heartbeatAge === null ? (
          <span className="wb-quiet">not a registered worker</span>
        ) : (
          <>
            <span className="inline-flex items-center gap-1.5 whitespace-nowrap tabular-nums">
              <span aria-hidden className={`wb-dot ${claim.workerAlive ? 'bg-emerald-500' : 'bg-red-500'}`} />
              {relative(now - claim.heartbeatAge, now)}
            </span>
            {!claim.workerAlive && <div className="text-xs text-red-700 dark:text-red-300">worker silent</div>}
          </>
        )}
      </td>
      <td className={td}>
        <ClaimCountdown idemKey={k} expiresAt={claim.expiresAt} serverNow={now} orphaned={claim.orphaned} />
      </td>
      <td className={`${td} w-72 min-w-72`}>
        {claim.orphaned ? (
          <div className="space-y-3">
            <div data-testid={`claim-orphaned-${k}`} className="wb-doubt">
              <p className="text-sm font-medium">
                <span aria-hidden>⚠ </span>Side effect in doubt
              </p>
              <p className="text-xs opacity-80">
                {claim.workerId
                  ? 'The worker died mid-execute; whether the side effect happened is unknown.'
                  : claim.outsideClient
                    ? 'The outside client never committed within the claim TTL; whether the side effect happened is unknown.'
                    : 'Its holder neither committed nor renewed before its lease passed; whether the side effect happened is unknown.'}
              </p>
            </div>
            {operator ? (
              <ClaimActions idemKey={k} attempt={claim.attempt} />
            ) : (
              <p className="text-xs wb-soft">An operator can expire it or resolve it by hand.</p>
            )}
          </div>
        ) : (
          <span className="inline-flex items-center gap-1.5 wb-body">
            <span aria-hidden className="wb-dot motion-safe:animate-pulse bg-blue-500" />
            Executing
          </span>
        )}
      </td>
    </tr>
  );
}
