import { describe, expect, it } from 'vitest';
import { stepsOf } from '../../lib/engine/workflow';
import { builtinRegistry, builtinWorkflows } from '../../lib/engine/workflows';
import { InvalidInputError } from '../../lib/errors';

const registry = builtinRegistry();
const parse = (workflow: string, input: unknown) => registry.parseInput(workflow, input);
const problem = (workflow: string, input: unknown): string => {
  try {
    parse(workflow, input);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error(`input was accepted: ${JSON.stringify(input)}`);
};

describe('built-in workflows', () => {
  it('registers agent-batch and notify with step counts', () => {
    expect(registry.names()).toEqual(['agent-batch', 'notify', 'review-and-send']);
    const [agent, notify] = builtinWorkflows();
    expect(stepsOf(agent!, parse('agent-batch', { items: ['a', 'b', 'c'] }))).toBe(3);
    expect(stepsOf(agent!, parse('agent-batch', { count: 7 }))).toBe(7);
    expect(stepsOf(notify!, parse('notify', { count: 9, outbox: 'o.jsonl' }))).toBe(9);
  });
});

describe('agent-batch input', () => {
  it('applies defaults', () => {
    expect(parse('agent-batch', { count: 3 })).toEqual({ count: 3, latencyMs: 50, failureRate: 0 });
    expect(parse('agent-batch', { items: ['x'], latencyMs: 0, failureRate: 0.25 })).toEqual({
      items: ['x'],
      latencyMs: 0,
      failureRate: 0.25,
    });
  });

  it('wants exactly one of items and count', () => {
    expect(problem('agent-batch', {})).toMatch(/items: give either items \(a list of prompts\) or count, not neither/);
    expect(problem('agent-batch', { items: ['a'], count: 1 })).toMatch(/count: give either items or count, not both/);
  });

  it('names the wrong field', () => {
    expect(problem('agent-batch', { count: 1, latencyMs: 60_001 })).toMatch(
      /^invalid input for agent-batch: latencyMs: must be between 0 and 60000 ms$/,
    );
    expect(problem('agent-batch', { count: 1, latencyMs: -1 })).toMatch(/latencyMs: must be between 0 and 60000 ms/);
    expect(problem('agent-batch', { count: 1, latencyMs: 1.5 })).toMatch(
      /latencyMs: must be a whole number of milliseconds/,
    );
    expect(problem('agent-batch', { count: 1, latencyMs: '5' })).toMatch(/latencyMs: must be a number of milliseconds/);
    expect(problem('agent-batch', { count: 1, failureRate: 1.01 })).toMatch(/failureRate: must be between 0 and 1/);
    expect(problem('agent-batch', { count: 0 })).toMatch(/count: must be at least 1/);
    expect(problem('agent-batch', { count: 1_000_001 })).toMatch(/count: must be at most 1,000,000/);
    expect(problem('agent-batch', { count: 2.5 })).toMatch(/count: must be a whole number/);
    expect(problem('agent-batch', { items: [] })).toMatch(/items: must not be empty/);
    expect(problem('agent-batch', { items: ['ok', 3] })).toMatch(/items\.1: each item must be a string/);
    expect(problem('agent-batch', { items: 'abc' })).toMatch(/items: must be an array of strings/);
    expect(problem('agent-batch', { count: 1, extra: true })).toMatch(
      /^invalid input for agent-batch: extra: is not a known field$/,
    );
    expect(problem('agent-batch', null)).toMatch(/\(input\): input must be an object/);
  });

  it('limits each item to 10 KB of UTF-8', () => {
    expect(() => parse('agent-batch', { items: ['a'.repeat(10_240)] })).not.toThrow();
    expect(problem('agent-batch', { items: ['ok', 'a'.repeat(10_241)] })).toMatch(
      /items\.1: each item must be at most 10 KB/,
    );
    // 3,414 three-byte characters: under 10,240 characters, over 10,240 bytes.
    expect(problem('agent-batch', { items: ['€'.repeat(3_414)] })).toMatch(/items\.0: each item must be at most 10 KB/);
  });
});

describe('notify input', () => {
  it('applies defaults and names the wrong field', () => {
    expect(parse('notify', { count: 2, outbox: 'x.jsonl' })).toEqual({ count: 2, outbox: 'x.jsonl', latencyMs: 0 });
    expect(problem('notify', { count: 2, outbox: 'x', latencyMs: 70_000 })).toMatch(
      /^invalid input for notify: latencyMs: must be between 0 and 60000 ms$/,
    );
    expect(problem('notify', { count: 0, outbox: 'x' })).toMatch(/count: must be at least 1/);
    expect(problem('notify', { count: 1_000_001, outbox: 'x' })).toMatch(/count: must be at most 1,000,000/);
    expect(problem('notify', { count: 1 })).toMatch(/outbox: must be a file path/);
    expect(parse('notify', { count: 1, outbox: 'outboxes/out.jsonl' })).toMatchObject({ outbox: 'outboxes/out.jsonl' });
    expect(problem('notify', { count: 1, outbox: 'x', items: [] })).toMatch(/items: is not a known field/);
  });
});

describe('notify outbox path', () => {
  // The path arrives from a browser form or an API client and is opened by a worker: it must name a file
  // inside the data directory and nothing else on the worker's disk.
  it.each([
    [
      '/etc/passwd',
      /^invalid input for notify: outbox: must be a path inside the data directory \(WAYBILL_DATA_DIR\), such as outbox.jsonl: absolute paths are refused$/,
    ],
    ['C:\\Windows\\x.jsonl', /outbox: must be a path inside the data directory/],
    ['\\\\host\\share\\x.jsonl', /outbox: must be a path inside the data directory/],
    ['../x.jsonl', /^invalid input for notify: outbox: must stay inside the data directory: "\.\." is refused$/],
    ['a/../../x.jsonl', /outbox: must stay inside the data directory/],
    ['a\\..\\..\\x.jsonl', /outbox: must stay inside the data directory/],
    ['..', /outbox: must stay inside the data directory/],
    ['outboxes/', /outbox: must name a file, not a directory/],
    ['x\0.jsonl', /outbox: must not contain NUL/],
  ])('refuses %j, naming the field', (outbox, message) => {
    expect(problem('notify', { count: 1, outbox })).toMatch(message);
  });
});
