CREATE TABLE `workflows` (
	`name` text PRIMARY KEY NOT NULL,
	`description` text,
	`input_schema_json` text NOT NULL,
	`total_steps` integer,
	`version` text,
	`published_by` text,
	`updated_at` real NOT NULL
);
--> statement-breakpoint
ALTER TABLE `workers` ADD `machine` text;--> statement-breakpoint
ALTER TABLE `workers` ADD `workflows_json` text;