/** The run's input, output and saved state, as JSON. */
import { JsonView } from '@/app/components/json-view';
import { Card } from '@/app/components/ui';
import type { RunDetail } from '@/lib/data/run-detail';

export function RunData({ detail }: { detail: RunDetail }) {
  const { run, progress } = detail;
  const term = 'text-xs text-zinc-500 dark:text-zinc-400';
  return (
    <Card title="Input and output">
      <dl className="space-y-2 text-sm">
        <div>
          <dt className={term}>Input</dt>
          <dd>
            <JsonView json={run.inputJson} label="run input" testId="run-input" />
          </dd>
        </div>
        <div>
          <dt className={term}>Output</dt>
          <dd>
            <JsonView json={run.outputJson} label="run output" testId="run-output" />
          </dd>
        </div>
        {progress && (
          <div>
            <dt className={term}>Saved state</dt>
            <dd>
              <JsonView json={progress.stateJson} label="saved state" testId="run-state" />
            </dd>
          </div>
        )}
      </dl>
    </Card>
  );
}
