DROP INDEX `committed_run_order`;--> statement-breakpoint
DROP INDEX `committed_run_step`;--> statement-breakpoint
CREATE INDEX `committed_run_step` ON `committed` (`run_id`,`step`,`idem_key`);