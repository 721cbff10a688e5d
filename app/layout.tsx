import type { Metadata } from 'next';
import Link from 'next/link';
import type { ReactNode } from 'react';
import { allows } from '@/lib/auth/principal';
import { currentPrincipal } from '@/lib/auth/server';
import { MainNav } from './components/main-nav';
import { SessionControl } from './components/session-control';
import './globals.css';

export const metadata: Metadata = {
  title: { default: 'Waybill', template: '%s · Waybill' },
  description: 'Durable checkpoints and exactly-once side effects for long-running agent runs.',
};

const NAV = [
  { href: '/', label: 'Runs' },
  { href: '/claims', label: 'Claims' },
  { href: '/workers', label: 'Workers' },
  { href: '/schedules', label: 'Schedules' },
  { href: '/webhooks', label: 'Webhooks' },
  { href: '/audit', label: 'Audit' },
  { href: '/runs/new', label: 'Start a run', operator: true },
];

export default async function RootLayout({ children }: { children: ReactNode }) {
  const who = await currentPrincipal();
  // A viewer is not offered what the server would refuse; the server's check is what protects.
  const nav = NAV.filter((item) => !item.operator || (who !== null && allows(who, 'operator')));
  return (
    <html lang="en">
      <body className="min-h-screen bg-zinc-50 text-zinc-900 antialiased dark:bg-zinc-950 dark:text-zinc-100">
        <a
          href="#main"
          className="sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:rounded focus:bg-white focus:px-3 focus:py-2 dark:focus:bg-zinc-900"
        >
          Skip to content
        </a>
        <header className="border-b border-zinc-200 bg-white dark:border-zinc-800 dark:bg-zinc-900">
          <nav
            className="mx-auto flex max-w-7xl flex-wrap items-center gap-x-6 gap-y-2 px-4 py-3 sm:px-6"
            aria-label="Main"
          >
            <Link href="/" prefetch={false} className="text-base font-semibold tracking-tight">
              Waybill
            </Link>
            <MainNav items={nav.map(({ href, label }) => ({ href, label }))} />
            <SessionControl who={who} />
          </nav>
        </header>
        <main id="main" className="mx-auto max-w-7xl px-4 py-6 sm:px-6">
          {children}
        </main>
      </body>
    </html>
  );
}
