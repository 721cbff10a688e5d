import Link from 'next/link';
import { runsHref } from '@/app/components/runs-query';
import type { RunTags } from '@/lib/store/contract';

/** A run's tags and metadata, each a link to the runs that share it (the runs list's `?tag=` and `?meta=`). */
export function RunTagsLine({ tags }: { tags: RunTags }) {
  const metadata = Object.entries(tags.metadata);
  if (tags.tags.length === 0 && metadata.length === 0) return null;
  const chip =
    'rounded-md bg-zinc-100 px-2 py-0.5 font-mono text-xs text-zinc-700 hover:underline dark:bg-zinc-800 dark:text-zinc-300';
  return (
    <div data-testid="run-tags" className="flex flex-wrap items-baseline gap-x-4 gap-y-1 text-sm">
      {tags.tags.length > 0 && (
        <p className="flex flex-wrap items-baseline gap-1.5">
          <span className="text-zinc-600 dark:text-zinc-400">Tags</span>
          {tags.tags.map((tag) => (
            <Link key={tag} prefetch={false} href={runsHref({ tag: [tag] })} data-testid="run-tag" className={chip}>
              {tag}
            </Link>
          ))}
        </p>
      )}
      {metadata.length > 0 && (
        <p className="flex flex-wrap items-baseline gap-1.5">
          <span className="text-zinc-600 dark:text-zinc-400">Metadata</span>
          {metadata.map(([key, value]) => (
            <Link
              key={key}
              prefetch={false}
              href={runsHref({ meta: [`${key}=${value}`] })}
              data-testid="run-meta"
              className={chip}
            >
              {key}={value}
            </Link>
          ))}
        </p>
      )}
    </div>
  );
}
