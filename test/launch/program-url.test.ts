/**
 * The address npm start hands its worker (`--url`) for the programs of command workflows: the dashboard's own,
 * over loopback when it listens on every address, IPv6 in brackets.
 */
import { describe, expect, it } from 'vitest';
import { programUrl } from '../../lib/launch/program-url';

describe("npm start's address for its worker's programs", () => {
  it('is the dashboard host and port, loopback for a wildcard, IPv6 bracketed', () => {
    expect(programUrl('127.0.0.1', 3000)).toBe('http://127.0.0.1:3000');
    expect(programUrl('localhost', 3001)).toBe('http://localhost:3001');
    expect(programUrl('0.0.0.0', 3000)).toBe('http://127.0.0.1:3000');
    expect(programUrl('::', 3000)).toBe('http://[::1]:3000');
    expect(programUrl('::1', 8080)).toBe('http://[::1]:8080');
    expect(programUrl('waybill.internal', 80)).toBe('http://waybill.internal:80');
  });
});
