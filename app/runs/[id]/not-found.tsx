import Link from 'next/link';
import { buttonClass, EmptyState } from '@/app/components/ui';

export default function RunNotFound() {
  return (
    <div data-testid="run-not-found" className="mx-auto max-w-xl py-10">
      <h1 className="sr-only">Run not found</h1>
      <EmptyState title="No such run">
        <p>No run, progress or claim has this id. It may be mistyped, or the run lives in another database.</p>
        <Link href="/" className={`${buttonClass()} mt-4`}>
          Back to the runs
        </Link>
      </EmptyState>
    </div>
  );
}
