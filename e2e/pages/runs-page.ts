/** /: the runs list, its stats, filters and bulk actions. */
import type { Locator, Page } from '@playwright/test';

export class RunsPage {
  readonly table: Locator;
  readonly search: Locator;
  readonly filterStatus: Locator;
  readonly filterWorkflow: Locator;

  constructor(readonly page: Page) {
    this.table = page.getByTestId('runs-table');
    this.search = page.getByTestId('search');
    this.filterStatus = page.getByTestId('filter-status');
    this.filterWorkflow = page.getByTestId('filter-workflow');
  }

  async goto(): Promise<void> {
    await this.page.goto('/');
    await this.page.getByTestId('stat-running').waitFor();
  }

  row(id: string): Locator {
    return this.page.getByTestId(`run-row-${id}`);
  }

  status(id: string): Locator {
    return this.page.getByTestId(`run-status-${id}`);
  }

  /** What a queued run waits for, under its status. */
  queuedReason(id: string): Locator {
    return this.page.getByTestId(`run-queued-reason-${id}`);
  }

  /** The row's progress bar (its text: done/total). */
  progress(id: string): Locator {
    return this.row(id).getByRole('progressbar', { name: `Progress of ${id}` });
  }

  stat(name: 'running' | 'steps-per-minute' | 'skip-ratio' | 'orphaned'): Locator {
    return this.page.getByTestId(`stat-${name}`);
  }

  /** The main navigation: runs, claims, workers, start-a-run. */
  nav(name: 'runs' | 'claims' | 'workers' | 'start-a-run'): Locator {
    return this.page.getByTestId(`nav-${name}`);
  }
}
