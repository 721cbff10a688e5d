/** What a replay costs against what a save costs: the median step over the progress save (lib/engine/advice.ts). */
import { Card } from '@/app/components/ui';
import { count } from '@/lib/count';
import type { RunDetail } from '@/lib/data/run-detail';

export function RedoSave({ redoSave }: { redoSave: RunDetail['redoSave'] }) {
  return (
    <Card title="Redo ÷ save" testId="redo-save">
      {redoSave ? (
        <div className="space-y-2">
          <p className="text-2xl font-semibold tabular-nums" data-testid="redo-save-ratio">
            {redoSave.ratio >= 10 ? count(redoSave.ratio) : redoSave.ratio.toFixed(1)}×
          </p>
          <p className="text-xs text-zinc-600 dark:text-zinc-400">
            median step{' '}
            <span className="font-medium tabular-nums text-zinc-800 dark:text-zinc-200">{ms(redoSave.stepMs)}</span>
            {' ÷ '}save{' '}
            <span className="font-medium tabular-nums text-zinc-800 dark:text-zinc-200">{ms(redoSave.saveMs)}</span>
          </p>
          <p className="text-sm" data-testid="redo-save-advice">
            {redoSave.advice}
          </p>
        </div>
      ) : (
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          Not measured yet: it needs a committed step and a timed progress save.
        </p>
      )}
    </Card>
  );
}

function ms(value: number): string {
  return value >= 1000
    ? `${(value / 1000).toFixed(1)} s`
    : value >= 10
      ? `${Math.round(value)} ms`
      : `${value.toFixed(2)} ms`;
}
