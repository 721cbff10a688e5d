/** /audit: the operators' log and its filters (the API's query: who, action, run, since, until). */
import type { Locator, Page } from '@playwright/test';

export class AuditPage {
  readonly table: Locator;
  readonly error: Locator;

  constructor(readonly page: Page) {
    this.table = page.getByTestId('audit-table');
    this.error = page.getByTestId('audit-filter-error');
  }

  async goto(): Promise<void> {
    await this.page.goto('/audit');
  }

  /** Fills the filters given (the others left empty) and submits the form. */
  async filter(by: { actor?: string; action?: string; runId?: string; since?: string; until?: string }): Promise<void> {
    const f = (name: string) => this.page.getByTestId(`audit-filter-${name}`);
    if (by.actor !== undefined) await f('actor').fill(by.actor);
    if (by.action !== undefined) await f('action').selectOption(by.action);
    if (by.runId !== undefined) await f('run').fill(by.runId);
    if (by.since !== undefined) await f('since').fill(by.since);
    if (by.until !== undefined) await f('until').fill(by.until);
    await f('apply').click();
  }

  get targets(): Locator {
    return this.table.getByTestId('audit-target');
  }
}
