/**
 * Where a process-level test keeps its store: a SQLite file in the test's temp dir, or a PostgreSQL schema of
 * its own (created now, dropped when the test finishes), migrated before the test's first process starts. Both are given as a DATABASE_URL, because the
 * processes under test (the CLI, workers) only ever see a URL.
 */
import { onTestFinished } from 'vitest';
import type { RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { postgresAvailable, testSchema } from './postgres';
import { tempDir } from './tmp';

export type TargetKind = 'sqlite' | 'postgres';

export interface Target {
  kind: TargetKind;
  url: string;
  /** A store on the same database, for the test to read and assert with; closed after the test. */
  store(): Promise<Store & RunStore>;
}

/** The kinds to run: SQLite always; PostgreSQL when it answers (under CI=true it must). */
export async function targetKinds(suite: string): Promise<TargetKind[]> {
  return (await postgresAvailable(suite)) ? ['sqlite', 'postgres'] : ['sqlite'];
}

export async function makeTarget(kind: TargetKind): Promise<Target> {
  let url: string;
  if (kind === 'sqlite') {
    url = `file:${tempDir('waybill-proc-').file('w.db')}`;
  } else {
    url = (await testSchema('wb_proc')).url;
  }
  // Created (migrated) now, as `waybill migrate` would: the CLI's commands other than worker, drill and
  // migrate never create a store, and a test's first call is often a `waybill start`.
  const opened: Store & RunStore = await openStore(url, { synchronous: 'normal' });
  onTestFinished(async () => opened.close());
  return {
    kind,
    url,
    async store() {
      return opened;
    },
  };
}
