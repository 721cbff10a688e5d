CREATE TABLE `claims` (
	`idem_key` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`claimed_at` real NOT NULL,
	`token` text,
	`worker_id` text,
	`lease_expires_at` real,
	`heartbeat_at` real,
	`step` integer,
	`attempt` integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `claims_run` ON `claims` (`run_id`);--> statement-breakpoint
CREATE TABLE `committed` (
	`idem_key` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`result_json` text NOT NULL,
	`committed_at` real NOT NULL,
	`step` integer,
	`fingerprint` text,
	`worker_id` text,
	`duration_ms` real,
	`source` text DEFAULT 'executed' NOT NULL
);
--> statement-breakpoint
CREATE INDEX `committed_run_step` ON `committed` (`run_id`,`step`);--> statement-breakpoint
CREATE TABLE `progress` (
	`run_id` text PRIMARY KEY NOT NULL,
	`step` integer NOT NULL,
	`state_json` text NOT NULL,
	`updated_at` real NOT NULL,
	`executed` integer DEFAULT 0 NOT NULL,
	`skipped` integer DEFAULT 0 NOT NULL,
	`awaited` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`workflow` text NOT NULL,
	`input_json` text NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`total_steps` integer,
	`owner` text,
	`lease_expires_at` real,
	`attempts` integer DEFAULT 0 NOT NULL,
	`error` text,
	`output_json` text,
	`created_at` real NOT NULL,
	`updated_at` real NOT NULL,
	`started_at` real,
	`finished_at` real
);
--> statement-breakpoint
CREATE INDEX `runs_status_updated` ON `runs` (`status`,`updated_at`);--> statement-breakpoint
CREATE INDEX `runs_created` ON `runs` (`created_at`);--> statement-breakpoint
CREATE TABLE `step_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run_id` text NOT NULL,
	`idem_key` text,
	`step` integer,
	`outcome` text NOT NULL,
	`count` integer DEFAULT 1 NOT NULL,
	`duration_ms` real,
	`worker_id` text,
	`detail` text,
	`at` real DEFAULT (unixepoch('subsec')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `step_events_run` ON `step_events` (`run_id`,`id`);--> statement-breakpoint
CREATE INDEX `step_events_key` ON `step_events` (`idem_key`);--> statement-breakpoint
CREATE TABLE `workers` (
	`id` text PRIMARY KEY NOT NULL,
	`host` text NOT NULL,
	`pid` integer NOT NULL,
	`started_at` real NOT NULL,
	`heartbeat_at` real NOT NULL,
	`stopped_at` real
);
