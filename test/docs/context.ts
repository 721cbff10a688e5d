/** What a docs command's handler is given: the reader's terminal, the page's directory and a look at its store. */
import Database from 'better-sqlite3';
import type { TempDir } from '../support/tmp';
import type { until as untilFn } from '../support/until';
import type { Terminal } from './shell';

export interface Context {
  terminal: Terminal;
  dir: TempDir;
  store: StoreReader;
  until: typeof untilFn;
}

export type Handler = (command: string, context: Context) => Promise<void>;

export interface StoreReader {
  status(runId: string): string | null;
}

export function storeReader(file: string): StoreReader {
  return {
    status(runId) {
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        const row = db.prepare('SELECT status FROM runs WHERE id = ?').get(runId) as { status: string } | undefined;
        return row?.status ?? null;
      } finally {
        db.close();
      }
    },
  };
}
