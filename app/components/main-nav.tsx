'use client';
/**
 * The header's navigation, with the current section marked (aria-current="page", and a visible underline):
 * a run's page belongs to Runs, the start form to "Start a run". Links do not prefetch: the pages refresh
 * themselves every two seconds, and each refresh would prefetch every link again (see live-refresh.tsx).
 */
import Link from 'next/link';
import { usePathname } from 'next/navigation';

export interface NavItem {
  href: string;
  label: string;
}

/** Which item a path belongs to: the longest href that is the path or a folder of it; `/` takes the rest. */
export function activeHref(items: NavItem[], pathname: string): string | null {
  const matches = items.filter(
    (item) => item.href === '/' || pathname === item.href || pathname.startsWith(`${item.href}/`),
  );
  const best = matches.sort((a, b) => b.href.length - a.href.length)[0];
  if (!best) return null;
  // `/` is Runs: the list and each run's page, not the sign-in page or anything else outside the sections.
  if (best.href === '/' && !(pathname === '/' || pathname.startsWith('/runs/'))) return null;
  return best.href;
}

export function MainNav({ items }: { items: NavItem[] }) {
  const pathname = usePathname() ?? '/';
  const active = activeHref(items, pathname);
  return (
    <ul className="flex flex-wrap gap-x-4 gap-y-1 text-sm">
      {items.map((item) => {
        const current = item.href === active;
        return (
          <li key={item.href}>
            <Link
              href={item.href}
              prefetch={false}
              aria-current={current ? 'page' : undefined}
              data-testid={`nav-${item.label.toLowerCase().replace(/\s+/g, '-')}`}
              className={`rounded px-1 py-0.5 underline-offset-[6px] focus-visible:outline-2 focus-visible:outline-blue-600 ${
                current
                  ? 'font-medium text-zinc-900 underline decoration-blue-600 decoration-2 dark:text-zinc-100 dark:decoration-blue-400'
                  : 'text-zinc-600 hover:text-zinc-900 dark:text-zinc-400 dark:hover:text-zinc-100'
              }`}
            >
              {item.label}
            </Link>
          </li>
        );
      })}
    </ul>
  );
}
