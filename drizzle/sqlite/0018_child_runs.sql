ALTER TABLE `runs` ADD `parent_run_id` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `detached` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `runs_parent` ON `runs` (`parent_run_id`) WHERE parent_run_id IS NOT NULL;