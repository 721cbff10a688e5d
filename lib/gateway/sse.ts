/**
 * Server-sent events as the OpenAI and Anthropic APIs frame them: events separated by a blank line, each with
 * an optional `event:` name and `data:` lines. Only read here (to find usage); what a client is given is the
 * upstream's bytes as they came.
 */
export interface SseEvent {
  event: string | null;
  data: string;
}

export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length > 0) events.push({ event, data: data.join('\n') });
  }
  return events;
}

/** The events' data parsed as JSON; `[DONE]` and anything else that is not JSON is skipped. */
export function sseJson(text: string): { event: string | null; json: Record<string, unknown> }[] {
  const out: { event: string | null; json: Record<string, unknown> }[] = [];
  for (const e of parseSse(text)) {
    try {
      const json = JSON.parse(e.data) as unknown;
      if (json !== null && typeof json === 'object')
        out.push({ event: e.event, json: json as Record<string, unknown> });
    } catch {
      // `data: [DONE]` ends an OpenAI stream; it carries nothing to count.
    }
  }
  return out;
}
