/**
 * Start a run: pick a workflow (a built-in or one a worker published), fill its input (fields drawn from its
 * JSON Schema, the raw JSON beside them), optionally name the run.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { type StartChoice, StartRunForm } from '@/app/components/start-run-form';
import { requirePage } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { getWorkflowChoices } from '@/lib/data/workflows';

export const dynamic = 'force-dynamic';

export const metadata: Metadata = { title: 'Start a run' };

export default async function StartRunPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  // Starting a run is an operator's: a viewer gets a 403 here rather than a form the server would refuse.
  await requirePage('/runs/new', 'operator');
  const [choices, params] = await Promise.all([getWorkflowChoices(), searchParams]);
  const wanted = Array.isArray(params.workflow) ? params.workflow[0] : params.workflow;
  const initial = choices.find((choice) => choice.name === wanted)?.name ?? choices[0]?.name ?? '';
  const options: StartChoice[] = choices.map((choice) => ({
    name: choice.name,
    example: choice.example,
    schema: choice.inputSchema,
    description: choice.description,
    version: choice.version,
    totalSteps: choice.totalSteps,
    servedBy: choice.servedBy,
    builtin: choice.builtin,
  }));

  return (
    <div className="mx-auto max-w-3xl space-y-6">
      <header>
        <nav aria-label="Breadcrumb" className="text-sm text-zinc-600 dark:text-zinc-400">
          <Link
            href="/"
            className="rounded hover:text-zinc-900 hover:underline focus-visible:outline-2 focus-visible:outline-blue-600 dark:hover:text-zinc-100"
          >
            Runs
          </Link>
          <span aria-hidden className="px-1.5">
            /
          </span>
          <span aria-current="page">New</span>
        </nav>
        <h1 className="mt-1 text-2xl font-semibold tracking-tight">Start a run</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          The run is queued; a worker picks it up and checkpoints every step, so it survives crashes and redeploys.
        </p>
      </header>
      {options.length === 0 ? (
        <p className="rounded-lg border border-dashed border-zinc-300 px-6 py-10 text-center text-sm dark:border-zinc-700">
          No workflow is registered with this server.
        </p>
      ) : (
        <StartRunForm choices={options} initialWorkflow={initial} maxInputBytes={config().WAYBILL_MAX_BODY_BYTES} />
      )}
    </div>
  );
}
