import Link from 'next/link';
import { runHref, runsHref } from '@/app/components/runs-query';
import { Badge, Card } from '@/app/components/ui';
import type { RunChildren } from '@/lib/data/children';

/** A parent run's children: counts by status, the newest few, and the runs list filtered to all of them. */
export function ChildrenCard({ parent, list }: { parent: string; list: RunChildren }) {
  if (list.total === 0) return null;
  const link = 'font-mono text-blue-700 hover:underline dark:text-blue-400';
  const total = list.total.toLocaleString('en-US');
  return (
    <Card title="Children" testId="run-children">
      <p data-testid="children-counts" className="mb-3 flex flex-wrap gap-2 text-xs text-zinc-600 dark:text-zinc-400">
        {Object.entries(list.byStatus).map(([status, n]) => (
          <span key={status}>
            <Badge value={status} /> {(n ?? 0).toLocaleString('en-US')}
          </span>
        ))}
      </p>
      <ul className="space-y-1 text-sm">
        {list.first.map((c) => (
          <li key={c.id} data-testid="child-run" className="flex flex-wrap items-center gap-2">
            <Link prefetch={false} href={runHref(c.id)} className={link}>
              {c.id}
            </Link>
            <span className="text-zinc-600 dark:text-zinc-400">{c.workflow}</span>
            <Badge value={c.status} />
            {c.detached && (
              <span data-testid="child-detached" className="text-xs text-zinc-500">
                detached
              </span>
            )}
          </li>
        ))}
      </ul>
      <p className="mt-3 text-xs">
        <Link prefetch={false} href={runsHref({ parent })} data-testid="all-children" className={link}>
          all {total} children
        </Link>
      </p>
    </Card>
  );
}
