/** What may have run twice: steps committed under several keys, and keys reused with another input. */
import type { RunDetail } from '@/lib/data/run-detail';

export function Warnings({ detail }: { detail: RunDetail }) {
  if (detail.unstableKeys.length === 0 && detail.keyReuse.length === 0) return null;
  const box =
    'rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-amber-900 dark:border-amber-800 dark:bg-amber-950/50 dark:text-amber-100';
  return (
    <div className="space-y-6">
      {detail.unstableKeys.length > 0 && (
        <section data-testid="warning-unstable" aria-labelledby="warning-unstable-title" className={box}>
          <h2 id="warning-unstable-title" className="font-semibold">
            ⚠ Steps committed under several keys
          </h2>
          <p className="mt-1 text-xs">
            Their keys changed between attempts (a time or an attempt number in the key?), so the side effect may have
            run more than once.
          </p>
          <ul className="mt-2 space-y-1">
            {detail.unstableKeys.map((u) => (
              <li key={u.keys.join('\n')} className="text-xs">
                <span className="font-medium">{unstableLabel(u)}:</span>{' '}
                <span className="break-all font-mono">{u.keys.join(', ')}</span>
              </li>
            ))}
          </ul>
        </section>
      )}
      {detail.keyReuse.length > 0 && (
        <section data-testid="warning-reuse" aria-labelledby="warning-reuse-title" className={box}>
          <h2 id="warning-reuse-title" className="font-semibold">
            ⚠ Keys reused with a different input
          </h2>
          <p className="mt-1 text-xs">The same idempotency key came with another input fingerprint, and was refused.</p>
          <ul className="mt-2 space-y-1">
            {detail.keyReuse.map((e) => (
              <li key={e.id} className="text-xs">
                <span className="break-all font-mono">{e.idemKey ?? '—'}</span>
                {e.detail && <span className="break-words">: {e.detail}</span>}
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}

function unstableLabel(u: RunDetail['unstableKeys'][number]): string {
  if (u.step !== null) return `step ${u.step}`;
  return {
    step: 'one step',
    fingerprint: 'the same input (fingerprint)',
    time: 'keys differing only in the time they ran',
    attempt: 'keys differing only in an attempt number',
  }[u.why];
}
