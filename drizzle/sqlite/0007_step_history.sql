CREATE TABLE `committed_history` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`idem_key` text NOT NULL,
	`run_id` text NOT NULL,
	`result_json` text NOT NULL,
	`committed_at` real NOT NULL,
	`step` integer,
	`fingerprint` text,
	`worker_id` text,
	`duration_ms` real,
	`source` text NOT NULL,
	`forked_from` text,
	`input_json` text,
	`superseded_at` real NOT NULL,
	`superseded_by` text NOT NULL,
	`reason` text,
	`rerun` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `committed_history_run_step` ON `committed_history` (`run_id`,`step`,`id`);--> statement-breakpoint
ALTER TABLE `committed` ADD `forked_from` text;--> statement-breakpoint
ALTER TABLE `committed` ADD `input_json` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `forked_from_run` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `forked_at_step` integer;--> statement-breakpoint
CREATE INDEX `step_events_run_step` ON `step_events` (`run_id`,`step`);