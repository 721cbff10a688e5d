CREATE TABLE `run_metadata` (
	`run_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`run_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `run_metadata_key_value` ON `run_metadata` (`key`,`value`,`run_id`);--> statement-breakpoint
CREATE TABLE `run_tags` (
	`run_id` text NOT NULL,
	`tag` text NOT NULL,
	PRIMARY KEY(`run_id`, `tag`)
);
--> statement-breakpoint
CREATE INDEX `run_tags_tag` ON `run_tags` (`tag`,`run_id`);