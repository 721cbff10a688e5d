DROP INDEX `waits_due`;--> statement-breakpoint
CREATE INDEX `waits_open_due` ON `waits` (`due_at`) WHERE "waits"."decided_at" IS NULL;