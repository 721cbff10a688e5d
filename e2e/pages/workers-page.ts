/** /workers: every worker that registered, its heartbeat and state. */
import type { Locator, Page } from '@playwright/test';

export class WorkersPage {
  readonly table: Locator;

  constructor(readonly page: Page) {
    this.table = page.getByTestId('workers-table');
  }

  async goto(): Promise<void> {
    await this.page.goto('/workers');
  }

  row(id: string): Locator {
    return this.page.getByTestId(`worker-row-${id}`);
  }

  /** The workflows the worker serves, one item each. */
  serves(id: string): Locator {
    return this.page.getByTestId(`worker-serves-${id}`).locator('li');
  }

  /** "N of M busy": the runs it holds against its --concurrency. */
  slots(id: string): Locator {
    return this.page.getByTestId(`worker-slots-${id}`);
  }

  state(id: string): Locator {
    return this.page.getByTestId(`worker-state-${id}`);
  }
}
