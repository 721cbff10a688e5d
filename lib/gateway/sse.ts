/**
 * Server-sent events as the OpenAI and Anthropic APIs frame them: events separated by a blank line, each with
 * an optional `event:` name and `data:` lines. Read here to find usage; and what a client is given is the
 * upstream's bytes as they came, whole events, less only an event its request did not ask for (sseFilter).
 */
export interface SseEvent {
  event: string | null;
  data: string;
}

/** The blank line that ends an event, after its last line's own end. */
const EVENT_END = /\r?\n\r?\n/g;

export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split(EVENT_END)) {
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

export interface SseFilter {
  /** The next text as it arrived, cut anywhere; answers the kept events it completed, their bytes as they came. */
  push(text: string): string;
  /** The stream ended: what was left after its last blank line, if kept. */
  end(): string;
}

/**
 * Leaves out the events `keep` refuses, whole, wherever the reads cut them: an event is judged once its blank
 * line has arrived, so a usage event split across two reads is still one event. A block with no data (a
 * comment, a stray blank line) is kept. Given the same reads, it answers the same bytes, so a live stream and
 * its replay from the stored reads are given alike.
 */
export function sseFilter(keep: (event: SseEvent) => boolean): SseFilter {
  let pending = '';
  const kept = (block: string) => {
    const [event] = parseSse(block);
    return event === undefined || keep(event);
  };
  return {
    push(text) {
      // What was pending had no blank line, so one can only end in the new text: at most 3 characters before it.
      const seek = new RegExp(EVENT_END);
      seek.lastIndex = Math.max(0, pending.length - 3);
      pending += text;
      let out = '';
      let from = 0;
      for (let end = seek.exec(pending); end !== null; end = seek.exec(pending)) {
        const block = pending.slice(from, seek.lastIndex);
        if (kept(block)) out += block;
        from = seek.lastIndex;
      }
      pending = pending.slice(from);
      return out;
    },
    end() {
      const rest = pending;
      pending = '';
      return rest !== '' && kept(rest) ? rest : '';
    },
  };
}
