/**
 * The step page's frame: the run as its 404 needs it (see step-missing.tsx). Two primary-key reads; the page
 * reads the step itself.
 */
import type { ReactNode } from 'react';
import { runExists } from '@/lib/data/run-detail';
import { getStore } from '@/lib/data/store';
import { stepAddress } from './address';
import { StepMissingProvider } from './step-missing';

export default async function StepLayout({
  children,
  params,
}: {
  children: ReactNode;
  params: Promise<{ id: string; n: string }>;
}) {
  const address = stepAddress(await params);
  if (!address) return children;
  const [exists, run] = await Promise.all([
    runExists(address.runId),
    getStore().then((store) => store.getRun(address.runId)),
  ]);
  return (
    <StepMissingProvider value={{ ...address, runExists: exists, totalSteps: run?.totalSteps ?? null }}>
      {children}
    </StepMissingProvider>
  );
}
