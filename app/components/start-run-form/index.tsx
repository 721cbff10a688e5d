'use client';
/**
 * The start-a-run form. Every field is controlled, and the action is dispatched from onSubmit rather than
 * by the form's action prop: that path makes React reset the form after the action, and a rejected input
 * must stay on screen next to its errors (the action prop remains for a submit before hydration). The server validates (JSON, the workflow's
 * schema, the id); the client only helps: it swaps the example when the workflow changes and the input was
 * not edited, says early when the text is not JSON, and refuses an input over WAYBILL_MAX_BODY_BYTES itself: past
 * Next.js's limit for an action's body the server answers 413 unread, which no field can show.
 *
 * The input has two views of one value: fields drawn from the workflow's published JSON Schema (schema-fields.ts)
 * and the raw JSON below them, which is what is sent. A field edits its key in the JSON; the JSON is the
 * fallback for what no field can draw (nested objects, arrays) and is always there.
 *
 * The form holds the state both views share; each part of it is its own file here, and the schema-drawn fields
 * are ../schema-fields.ts.
 */
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { type FormEvent, startTransition, useActionState, useEffect, useId, useMemo, useState } from 'react';
import type { ActionResult } from '@/app/actions/result';
import { startRunAction } from '@/app/actions/runs';
import { tooLargeText } from '../json-limit';
import { objectOf, schemaFields, withField } from '../schema-fields';
import { buttonClass } from '../ui';
import type { StartChoice } from './choice';
import { hintClass, labelClass } from './classes';
import { splitErrors } from './errors';
import { InputField } from './input-field';
import { JsonInput } from './json-input';
import { StartOutcome } from './outcome';
import { RunIdField } from './run-id-field';
import { TagsFields } from './tags-fields';
import { WorkflowSelect } from './workflow-select';

export type { StartChoice };

export function StartRunForm({
  choices,
  initialWorkflow,
  maxInputBytes,
}: {
  choices: StartChoice[];
  initialWorkflow: string;
  /** WAYBILL_MAX_BODY_BYTES: an input past it is refused here, before a body the server would not read is sent. */
  maxInputBytes: number;
}) {
  const router = useRouter();
  const [state, formAction, pending] = useActionState<ActionResult<{ id: string }> | null, FormData>(
    startRunAction,
    null,
  );
  const exampleOf = (name: string) => choices.find((choice) => choice.name === name)?.example ?? '{}';

  const [workflow, setWorkflow] = useState(initialWorkflow);
  const [input, setInput] = useState(() => exampleOf(initialWorkflow));
  const [runId, setRunId] = useState('');
  const [tags, setTags] = useState('');
  const [metadata, setMetadata] = useState('');
  const choice = choices.find((c) => c.name === workflow);
  const edited = input !== exampleOf(workflow);

  useEffect(() => {
    if (state?.ok && state.data) router.push(`/runs/${encodeURIComponent(state.data.id)}`);
  }, [state, router]);

  // The size refused here, shown as the server's answer would be; cleared by the next send.
  const [refused, setRefused] = useState<Record<string, string[]> | null>(null);
  const errors = splitErrors(refused ?? (state && !state.ok ? (state.errors ?? {}) : {}));
  const ids = { workflow: useId(), input: useId(), id: useId() };
  const fields = useMemo(() => schemaFields(choice?.schema ?? null), [choice]);
  const current = useMemo(() => objectOf(input), [input]);
  // An error shows under the field it names (`input.count`, `input.items.1` → items), and every one is also
  // listed by the JSON, which is what was sent and where a field with no input of its own is edited.
  const fieldOf = (path: string) => path.split('.')[0] ?? '';
  const errorsOf = (name: string) => errors.input.filter((e) => fieldOf(e.path) === name);
  const setField = (name: string, value: unknown) => setInput(withField(input, name, value));

  const changeWorkflow = (name: string) => {
    // An input the user has not touched follows the workflow; an edited one is theirs and stays.
    if (!edited || input.trim() === '') setInput(exampleOf(name));
    setWorkflow(name);
  };

  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const large = tooLargeText(input, maxInputBytes);
    setRefused(large === null ? null : { input: [large] });
    if (large !== null) return;
    const data = new FormData(event.currentTarget);
    startTransition(() => formAction(data));
  };

  return (
    <form
      action={formAction}
      onSubmit={submit}
      noValidate
      data-testid="start-form"
      className="space-y-6 rounded-lg border border-zinc-200 bg-white p-4 shadow-sm sm:p-6 dark:border-zinc-800 dark:bg-zinc-900"
    >
      <StartOutcome state={state} other={errors.other} />

      <WorkflowSelect
        id={ids.workflow}
        choices={choices}
        value={workflow}
        onChange={changeWorkflow}
        errors={errors.workflow}
      />

      {fields && fields.length > 0 && (
        <fieldset className="space-y-4" data-testid="start-fields">
          <legend className={labelClass}>Input fields</legend>
          {current === null && (
            <p className={hintClass}>The JSON below is not an object yet: fix it there, and the fields follow.</p>
          )}
          {fields.map((field) => (
            <InputField
              key={`${workflow}:${field.name}`}
              field={field}
              value={current?.[field.name]}
              disabled={current === null}
              errors={errorsOf(field.name)}
              onChange={(value) => setField(field.name, value)}
            />
          ))}
        </fieldset>
      )}

      <JsonInput
        id={ids.input}
        input={input}
        onInput={setInput}
        example={exampleOf(workflow)}
        workflow={workflow}
        withFields={Boolean(fields && fields.length > 0)}
        errors={errors.input}
        schema={choice?.schema ?? null}
      />

      <RunIdField id={ids.id} value={runId} onChange={setRunId} workflow={workflow} errors={errors.id} />

      <TagsFields tags={tags} metadata={metadata} onTags={setTags} onMetadata={setMetadata} errors={errors.tags} />

      <div className="flex flex-col-reverse gap-2 border-t border-zinc-200 pt-4 sm:flex-row sm:justify-end dark:border-zinc-800">
        <Link href="/" className={buttonClass()}>
          Cancel
        </Link>
        <button
          type="submit"
          data-testid="start-submit"
          disabled={pending || Boolean(state?.ok)}
          className={buttonClass('primary')}
        >
          {pending ? 'Starting…' : 'Start run'}
        </button>
      </div>
    </form>
  );
}
