/**
 * The whole-event filter a stream's client is given through (lib/gateway/sse.ts): wherever the reads cut the
 * stream, even inside an event's blank line, the kept events come out whole and as they came, the refused one
 * not at all, and nothing is given twice.
 */
import { describe, expect, it } from 'vitest';
import { type SseEvent, sseFilter } from '../../lib/gateway/sse';

const refuseUsage = (e: SseEvent) => !e.data.includes('"usage":{');

function through(reads: string[]): string {
  const filter = sseFilter(refuseUsage);
  return reads.map((r) => filter.push(r)).join('') + filter.end();
}

describe('sseFilter', () => {
  for (const eol of ['\n', '\r\n']) {
    const event = (data: string) => `data: ${data}${eol}${eol}`;
    const kept = [
      event('{"choices":[{"delta":{"content":"héllo"}}],"usage":null}'),
      `: a comment${eol}${eol}`,
      `event: named${eol}data: {"choices":[{"delta":{}}]}${eol}data: second line${eol}${eol}`,
    ];
    const usage = event('{"choices":[],"usage":{"prompt_tokens":3}}');
    const done = event('[DONE]');
    const stream = [...kept, usage, done].join('');
    const wanted = [...kept, done].join('');

    it(`keeps the other events as they came, cut at any one point (${JSON.stringify(eol)})`, () => {
      expect(through([stream])).toBe(wanted);
      for (let at = 0; at <= stream.length; at++) expect(through([stream.slice(0, at), stream.slice(at)])).toBe(wanted);
    });

    it(`keeps them read a character at a time (${JSON.stringify(eol)})`, () => {
      expect(through([...stream])).toBe(wanted);
    });

    it(`judges an event left without its blank line at the end (${JSON.stringify(eol)})`, () => {
      expect(through([kept[0]!, `data: {"choices":[],"usage":{"prompt_tokens":3}}`])).toBe(kept[0]);
      expect(through([kept[0]!, 'data: [DONE]'])).toBe(`${kept[0]}data: [DONE]`);
    });
  }

  it('gives an event only once its blank line has arrived', () => {
    const filter = sseFilter(refuseUsage);
    expect(filter.push('data: {"a":1}\n')).toBe('');
    expect(filter.push('\ndata: {"choices":[],"usage":{"x":1}}\n\ndata: [DO')).toBe('data: {"a":1}\n\n');
    expect(filter.push('NE]\n\n')).toBe('data: [DONE]\n\n');
    expect(filter.end()).toBe('');
  });
});
