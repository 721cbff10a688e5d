/** The confirm dialog cancel, expire and sweep open first (app/components/confirm-action.tsx). */
import type { Locator, Page } from '@playwright/test';

export class ConfirmDialog {
  readonly root: Locator;
  readonly reason: Locator;
  readonly submit: Locator;
  readonly keep: Locator;

  constructor(page: Page) {
    this.root = page.getByTestId('confirm-dialog');
    this.reason = this.root.getByTestId('confirm-reason');
    this.submit = this.root.getByTestId('confirm-submit');
    this.keep = this.root.getByTestId('confirm-cancel');
  }

  /** Confirms, with a reason when one is given. */
  async confirm(reason?: string): Promise<void> {
    if (reason !== undefined) await this.reason.fill(reason);
    await this.submit.click();
  }
}
