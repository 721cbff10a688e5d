DROP INDEX `runs_runnable`;--> statement-breakpoint
ALTER TABLE `runs` ADD `priority` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `runs_started` ON `runs` (`workflow`,`started_at`) WHERE started_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `runs_runnable` ON `runs` ("priority" DESC,`created_at`,`id`) WHERE status IN ('queued', 'running', 'waiting');--> statement-breakpoint
ALTER TABLE `workflows` ADD `limits_json` text;