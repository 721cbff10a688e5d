CREATE INDEX `committed_run_order` ON `committed` (`run_id`,coalesce("step", -1),`idem_key`);--> statement-breakpoint
CREATE INDEX `committed_at` ON `committed` (`committed_at`);--> statement-breakpoint
CREATE INDEX `progress_updated` ON `progress` (`updated_at`);--> statement-breakpoint
CREATE INDEX `runs_updated` ON `runs` (`updated_at`);