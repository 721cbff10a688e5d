export default function Home() {
  return (
    <main className="mx-auto max-w-2xl px-6 py-16">
      <h1 className="text-2xl font-semibold">Waybill</h1>
      <p className="mt-4 text-zinc-600 dark:text-zinc-400">
        Progress lives outside the sandbox; side effects run once. The dashboard arrives with the control-plane
        work; the checkpoint core and its stores are usable from any Node program today.
      </p>
    </main>
  );
}
