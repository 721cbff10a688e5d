/** A workflow the form offers, with what it says about it. */
export interface StartChoice {
  name: string;
  example: string;
  /** The input's JSON Schema; null when it has none. */
  schema: Record<string, unknown> | null;
  description: string | null;
  version: string | null;
  totalSteps: number | null;
  /** Live workers serving it; none: a run waits for one. */
  servedBy: string[];
  builtin: boolean;
}
