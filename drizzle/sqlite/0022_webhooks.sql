CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`webhook_id` text NOT NULL,
	`event` text NOT NULL,
	`run_id` text,
	`payload_json` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` real NOT NULL,
	`lease_owner` text,
	`lease_expires_at` real,
	`last_status` integer,
	`last_error` text,
	`created_at` real NOT NULL,
	`updated_at` real NOT NULL,
	`delivered_at` real
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`next_attempt_at`) WHERE "webhook_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook` ON `webhook_deliveries` (`webhook_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_created` ON `webhook_deliveries` (`created_at`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`events_json` text NOT NULL,
	`secret` text NOT NULL,
	`paused` integer DEFAULT 0 NOT NULL,
	`in_doubt_seconds` integer DEFAULT 300 NOT NULL,
	`created_at` real NOT NULL,
	`updated_at` real NOT NULL
);
