/** /runs/new: the start form. */
import type { Locator, Page } from '@playwright/test';

export class StartRunPage {
  readonly workflow: Locator;
  readonly input: Locator;
  readonly id: Locator;
  readonly submit: Locator;
  /** The form-level alert (role=alert). */
  readonly error: Locator;

  constructor(readonly page: Page) {
    this.workflow = page.getByTestId('start-workflow');
    this.input = page.getByTestId('start-input');
    this.id = page.getByTestId('start-id');
    this.submit = page.getByTestId('start-submit');
    this.error = page.getByTestId('start-error');
  }

  async goto(): Promise<void> {
    await this.page.goto('/runs/new');
    await this.submit.waitFor();
  }

  /** Fills the form and submits it; the caller checks where that led. */
  async start(run: { workflow: string; input: string; id?: string }): Promise<void> {
    await this.workflow.selectOption(run.workflow);
    await this.input.fill(run.input);
    if (run.id !== undefined) await this.id.fill(run.id);
    await this.submit.click();
  }

  /** The inline error under a field: 'input' or 'id', or `input.<name>` under a field drawn from the schema. */
  fieldError(field: 'input' | 'id' | `input.${string}`): Locator {
    return this.page.getByTestId(`field-error-${field}`);
  }

  /** An input drawn from the workflow's JSON Schema. */
  field(name: string): Locator {
    return this.page.getByTestId(`start-field-${name}`);
  }

  /** "No live worker serves …" under the workflow picker. */
  get noWorker(): Locator {
    return this.page.getByTestId('start-no-worker');
  }
}
