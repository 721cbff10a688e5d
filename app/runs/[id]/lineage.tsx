import Link from 'next/link';
import type { RunDetail } from '@/lib/data/run-detail';

/** A fork links to its original, and an original to its forks. */
export function Lineage({
  run,
  forks,
}: {
  run: RunDetail['run'];
  forks: { id: string; forkedAtStep: number | null }[];
}) {
  const link = 'font-mono text-blue-700 hover:underline dark:text-blue-400';
  const original = run.forkedFromRun;
  const parent = run.parentRunId;
  if (!original && !parent && forks.length === 0) return null;
  return (
    <div data-testid="run-lineage" className="space-y-1 text-sm text-zinc-600 dark:text-zinc-400">
      {parent && (
        <p data-testid="child-of">
          Child of{' '}
          <Link href={`/runs/${encodeURIComponent(parent)}`} className={link}>
            {parent}
          </Link>
          {run.detached ? ' (detached: it outlives the parent’s cancel)' : ''}
        </p>
      )}
      {original && (
        <p data-testid="forked-from">
          Forked from{' '}
          <Link href={`/runs/${encodeURIComponent(original)}`} className={link}>
            {original}
          </Link>
          {run.forkedAtStep !== null ? ` at step ${run.forkedAtStep}` : ''}: steps before it were copied from there.
        </p>
      )}
      {forks.length > 0 && (
        <p data-testid="forks">
          Forks:{' '}
          {forks.map((f, i) => (
            <span key={f.id}>
              {i > 0 && ', '}
              <Link href={`/runs/${encodeURIComponent(f.id)}`} className={link}>
                {f.id}
              </Link>
              {f.forkedAtStep !== null && ` (from step ${f.forkedAtStep})`}
            </span>
          ))}
        </p>
      )}
    </div>
  );
}
