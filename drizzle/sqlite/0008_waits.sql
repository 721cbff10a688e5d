CREATE TABLE `waits` (
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
	PRIMARY KEY(`run_id`, `name`)
);
--> statement-breakpoint
CREATE INDEX `waits_due` ON `waits` (`due_at`);