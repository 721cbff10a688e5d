/** The form's class names: its fields, their border by validity, labels, hints and errors. */
export const fieldClass =
  'block w-full rounded-md border bg-white px-3 py-2 text-sm text-zinc-900 shadow-sm placeholder:text-zinc-400 focus-visible:outline-2 focus-visible:outline-offset-0 focus-visible:outline-blue-600 dark:bg-zinc-900 dark:text-zinc-100 dark:placeholder:text-zinc-500 dark:scheme-dark';
export const fieldBorder = (invalid: boolean) =>
  invalid ? 'border-red-500 dark:border-red-500' : 'border-zinc-300 dark:border-zinc-700';
export const labelClass = 'block text-sm font-medium text-zinc-800 dark:text-zinc-200';
export const hintClass = 'mt-1 text-xs text-zinc-600 dark:text-zinc-400';
export const errorClass = 'mt-1.5 text-sm text-red-700 dark:text-red-400';
