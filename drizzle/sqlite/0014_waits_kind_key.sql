PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_waits` (
	`run_id` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`details_json` text,
	`created_at` real NOT NULL,
	`due_at` real,
	`on_timeout` text,
	`decided_at` real,
	`decision_json` text,
	`decided_by` text,
	`note` text,
	PRIMARY KEY(`run_id`, `kind`, `name`)
);
--> statement-breakpoint
INSERT INTO `__new_waits`("run_id", "name", "kind", "details_json", "created_at", "due_at", "on_timeout", "decided_at", "decision_json", "decided_by", "note") SELECT "run_id", "name", "kind", "details_json", "created_at", "due_at", "on_timeout", "decided_at", "decision_json", "decided_by", "note" FROM `waits`;--> statement-breakpoint
DROP TABLE `waits`;--> statement-breakpoint
ALTER TABLE `__new_waits` RENAME TO `waits`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `waits_open_due` ON `waits` (`due_at`) WHERE "waits"."decided_at" IS NULL;