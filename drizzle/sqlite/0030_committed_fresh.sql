-- A step's new committed row goes first to committed_fresh, a small index by run of the newest rows of all runs, and
-- the commits settle it into committed_run_step later, with the other fresh rows (lib/store/sqlite/committed-rows.ts).
-- committed_run_step leads with the run, so each run's rows sit in leaves of their own: written at every step,
-- a 64-run batch wrote one of its pages per run, 1.4 of a step's 3.0 WAL pages (bench/RESULTS.md). `fresh` is
-- 1 while the row is fresh and null once settled: every row already here, and every row any other writer
-- inserts (a rerun's, the reference article's client), is settled from the start. No row is rewritten here.
ALTER TABLE `committed` ADD `fresh` integer;--> statement-breakpoint
DROP INDEX `committed_run_step`;--> statement-breakpoint
CREATE INDEX `committed_fresh` ON `committed` (`run_id`,`step`) WHERE fresh IS NOT NULL;--> statement-breakpoint
CREATE INDEX `committed_run_step` ON `committed` (`run_id`,`step`,`idem_key`) WHERE fresh IS NULL;
--> statement-breakpoint
-- A run's rows are found in both indexes now (`run_id = ?` alone would scan the table): the same trigger as 0027's.
DROP TRIGGER `progress_committed_count`;--> statement-breakpoint
CREATE TRIGGER `progress_committed_count` AFTER INSERT ON `progress` BEGIN
  UPDATE `progress` SET `committed_count` = (SELECT count(*) FROM `committed` c
      WHERE (c.`run_id` = NEW.`run_id` AND c.`fresh` IS NOT NULL) OR (c.`run_id` = NEW.`run_id` AND c.`fresh` IS NULL))
    WHERE `run_id` = NEW.`run_id`;
END;
