/**
 * What the step said as it ran: its own stream (ctx.stream) and the text of each streamed model call it made
 * through the gateway, read from the store's chunks. The page's live refresh re-reads it every two seconds,
 * so it grows while the step runs and stays, the same text, once the step is done.
 */
import { Card } from '@/app/components/ui';
import type { StepTranscript } from '@/lib/gateway/transcript';

const box =
  'max-h-[32rem] overflow-auto whitespace-pre-wrap break-words rounded bg-zinc-50 p-3 font-mono text-xs dark:bg-zinc-950';

export function TranscriptCard({ transcript, running }: { transcript: StepTranscript; running: boolean }) {
  if (!transcript.own && transcript.calls.length === 0) return null;
  const term = 'text-xs font-medium text-zinc-500 dark:text-zinc-400';
  return (
    <Card title={running ? 'Transcript (live)' : 'Transcript'} testId="step-transcript">
      <div className="space-y-4">
        {transcript.own && (
          <div>
            <h3 className={term}>Streamed by the step (attempt {transcript.own.attempt})</h3>
            <pre data-testid="step-stream-text" className={`mt-1 ${box}`}>
              {transcript.own.text}
            </pre>
          </div>
        )}
        {transcript.calls.map((c, i) => (
          <div key={c.id} data-testid="model-call-transcript">
            <h3 className={term}>
              Model call {i + 1}: {c.api}
              {c.model ? `, ${c.model}` : ''}
              {c.complete ? '' : ' (arriving)'}
            </h3>
            <pre data-testid="model-call-text" className={`mt-1 ${box}`}>
              {c.text}
            </pre>
          </div>
        ))}
      </div>
    </Card>
  );
}
