CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`data_json` text NOT NULL,
	`created_at` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_name` ON `events` (`name`,`created_at`);--> statement-breakpoint
ALTER TABLE `workflows` ADD `events_json` text;--> statement-breakpoint
CREATE INDEX `waits_open_event` ON `waits` (`name`,`created_at`) WHERE "waits"."kind" = 'event' AND "waits"."decided_at" IS NULL;