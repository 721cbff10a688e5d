ALTER TABLE `committed` ADD `prior_step` integer;--> statement-breakpoint
ALTER TABLE `committed` ADD `prior_state_json` text;--> statement-breakpoint
ALTER TABLE `committed_history` ADD `prior_step` integer;--> statement-breakpoint
ALTER TABLE `committed_history` ADD `prior_state_json` text;--> statement-breakpoint
ALTER TABLE `step_events` ADD `attempt` integer;--> statement-breakpoint
ALTER TABLE `step_events` ADD `max_attempts` integer;--> statement-breakpoint
ALTER TABLE `step_events` ADD `retry_at` real;--> statement-breakpoint
ALTER TABLE `step_events` ADD `previous_worker_id` text;--> statement-breakpoint
ALTER TABLE `step_events` ADD `previous_attempt` integer;