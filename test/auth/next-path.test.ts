/** Where sign-in may send a browser back to: only a path on this server, whatever the URL carried. */
import { describe, expect, it } from 'vitest';
import { safeNextPath } from '../../lib/auth/next-path';

describe('safeNextPath', () => {
  it('keeps our own paths, query and fragment included', () => {
    for (const path of ['/', '/claims', '/runs/a%2Fb?q=x#top', '/runs/new?workflow=agent-batch'])
      expect(safeNextPath(path)).toBe(path);
  });

  it('sends everything else to the runs list', () => {
    for (const bad of [
      undefined,
      null,
      42,
      ['/claims'],
      '',
      'claims',
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example',
      '\\\\evil.example',
      'javascript:alert(1)',
      ' /claims',
      '/claims\n',
      '/a\\b',
      '/x\u0000',
      `/${'a'.repeat(2048)}`,
    ]) {
      expect(safeNextPath(bad), JSON.stringify(bad)).toBe('/');
    }
  });
});
