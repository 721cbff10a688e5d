CREATE TABLE `metrics_tally` (
	`bounds` text PRIMARY KEY NOT NULL,
	`committed_mark` real,
	`committed_mark_key` text,
	`committed_mark_at` real,
	`events_mark` real,
	`steps_json` text NOT NULL,
	`durations_json` text NOT NULL
);
