'use client';
/**
 * A step page with nothing to show: which step is missing, or that the address names no step number, with
 * the run's page a click away; a run that does not exist is said to be missing itself.
 */
import Link from 'next/link';
import { buttonClass, EmptyState } from '@/app/components/ui';
import { useStepMissing } from './step-missing';

export default function StepNotFound() {
  const missing = useStepMissing();
  if (!missing?.runExists) {
    return (
      <div data-testid="step-not-found" className="mx-auto max-w-xl py-10">
        <h1 className="sr-only">Run not found</h1>
        <EmptyState title="No such run">
          <p data-testid="step-not-found-reason">
            {missing
              ? `No run, progress or claim has the id “${missing.runId}”, so it has no step ${missing.given} either.`
              : 'This address names no run.'}{' '}
            It may be mistyped, or the run lives in another database.
          </p>
          <Link href="/" className={`${buttonClass()} mt-4`}>
            Back to the runs
          </Link>
        </EmptyState>
      </div>
    );
  }
  const runHref = `/runs/${encodeURIComponent(missing.runId)}`;
  const last = missing.totalSteps === null ? null : missing.totalSteps - 1;
  return (
    <div data-testid="step-not-found" className="mx-auto max-w-xl py-10">
      <h1 className="sr-only">Step not found</h1>
      <EmptyState title={missing.step === null ? 'Not a step number' : `No step ${missing.step}`}>
        <p data-testid="step-not-found-reason">
          {missing.step === null
            ? `“${missing.given}” is not a step number: steps are numbered 0, 1, 2, …`
            : `Run ${missing.runId} has no step ${missing.step}${last === null ? '' : last < 0 ? ': it has no steps' : `: its steps are 0 to ${last}`}.`}
        </p>
        <Link prefetch={false} href={runHref} data-testid="step-not-found-run" className={`${buttonClass()} mt-4`}>
          Open run {missing.runId}
        </Link>
      </EmptyState>
    </div>
  );
}
