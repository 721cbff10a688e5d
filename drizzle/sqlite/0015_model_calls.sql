CREATE TABLE `model_call_chunks` (
	`call_id` text NOT NULL,
	`seq` integer NOT NULL,
	`data` text NOT NULL,
	PRIMARY KEY(`call_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `model_calls` (
	`id` text PRIMARY KEY NOT NULL,
	`idem_key` text,
	`sent_key` text,
	`run_id` text,
	`step` integer,
	`api` text NOT NULL,
	`model` text,
	`fingerprint` text NOT NULL,
	`state` text NOT NULL,
	`framing` text NOT NULL,
	`lease_token` text,
	`lease_expires_at` real,
	`status` integer,
	`headers_json` text,
	`body` text,
	`input_tokens` integer,
	`output_tokens` integer,
	`cached_tokens` integer,
	`cost_usd` real,
	`started_at` real NOT NULL,
	`completed_at` real,
	`retired_at` real
);
--> statement-breakpoint
CREATE UNIQUE INDEX `model_calls_key` ON `model_calls` (`idem_key`);--> statement-breakpoint
CREATE INDEX `model_calls_run` ON `model_calls` (`run_id`,`step`);