/**
 * The text a streamed model answer said, from its recorded SSE chunks: OpenAI chat's
 * `choices[].delta.content`, OpenAI responses' `response.output_text.delta`, Anthropic's text
 * `content_block_delta`. Read from the store's chunks, so a call still arriving shows what has come so far,
 * and a replayed call (given the same chunks) the same text.
 */
import type { ModelApi, Store } from '../store/contract';
import { sseJson } from './sse';

/** The text deltas of the events complete so far; an event cut between two chunks waits for the next read. */
export function streamedText(api: ModelApi, raw: string): string {
  // Only whole events: the text after the last blank line may be half an event still arriving.
  const end = Math.max(raw.lastIndexOf('\n\n'), raw.lastIndexOf('\r\n\r\n'));
  if (end < 0) return '';
  const out: string[] = [];
  for (const { event, json } of sseJson(raw.slice(0, end))) {
    const type = json.type ?? event;
    if (api === 'openai.chat') {
      const first = (json.choices as { index?: number; delta?: { content?: unknown } }[] | undefined)?.find(
        (c) => (c.index ?? 0) === 0,
      );
      if (typeof first?.delta?.content === 'string') out.push(first.delta.content);
    } else if (api === 'openai.responses') {
      if (type === 'response.output_text.delta' && typeof json.delta === 'string') out.push(json.delta);
    } else if (api === 'anthropic.messages') {
      const delta = json.delta as { type?: string; text?: unknown } | undefined;
      if (type === 'content_block_delta' && delta?.type === 'text_delta' && typeof delta.text === 'string')
        out.push(delta.text);
    }
  }
  return out.join('');
}

/** What a step said as it ran: its own stream (ctx.stream) and each streamed model call it made, in order. */
export interface StepTranscript {
  /** The step's own text, the newest attempt's; null when it streamed none. */
  own: { attempt: number; text: string } | null;
  /** Its streamed model calls through the gateway that are still current (a rerun retires the earlier ones). */
  calls: { id: string; api: ModelApi; model: string | null; complete: boolean; text: string }[];
}

export async function stepTranscript(
  store: Pick<Store, 'readStepStream' | 'listModelCalls' | 'readModelCallChunks'>,
  runId: string,
  step: number,
): Promise<StepTranscript> {
  const [own, calls] = await Promise.all([store.readStepStream(runId, step), store.listModelCalls({ runId })]);
  const streamed = calls.filter((c) => c.step === step && c.framing === 'sse' && c.retiredAt === null);
  return {
    own: own && { attempt: own.attempt, text: own.chunks.join('') },
    calls: await Promise.all(
      streamed.map(async (c) => ({
        id: c.id,
        api: c.api,
        model: c.model,
        complete: c.state === 'complete',
        text: streamedText(c.api, (await store.readModelCallChunks(c.id)).join('')),
      })),
    ),
  };
}
