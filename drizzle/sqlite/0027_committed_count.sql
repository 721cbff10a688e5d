-- A run's committed rows, kept on its progress row (committed_count): the runs list reads it instead of counting
-- a 100,000-step run's range of committed_run_step on every request. Kept by triggers, so every writer keeps it:
-- a commit alone or in a batch, a rerun's or a fork's rows, retention, a move, and the reference article's own
-- client, which inserts committed rows and upserts progress with its four columns only. A commit that writes
-- progress changes the progress row's page in its transaction anyway, so the count adds no page to such a step;
-- a commit without a progress write (a workflow's step) adds a page only where its run has a progress row.
-- A progress row, when it is made, counts the run's rows once; null stays null (the reader then counts).
ALTER TABLE `progress` ADD `committed_count` integer;--> statement-breakpoint
UPDATE `progress` SET `committed_count` = (SELECT count(*) FROM `committed` c WHERE c.`run_id` = `progress`.`run_id`);--> statement-breakpoint
CREATE TRIGGER `committed_count_insert` AFTER INSERT ON `committed` BEGIN
  UPDATE `progress` SET `committed_count` = `committed_count` + 1 WHERE `run_id` = NEW.`run_id`;
END;--> statement-breakpoint
CREATE TRIGGER `committed_count_delete` AFTER DELETE ON `committed` BEGIN
  UPDATE `progress` SET `committed_count` = `committed_count` - 1 WHERE `run_id` = OLD.`run_id`;
END;--> statement-breakpoint
CREATE TRIGGER `committed_count_move` AFTER UPDATE OF `run_id` ON `committed` WHEN OLD.`run_id` IS NOT NEW.`run_id` BEGIN
  UPDATE `progress` SET `committed_count` = `committed_count` - 1 WHERE `run_id` = OLD.`run_id`;
  UPDATE `progress` SET `committed_count` = `committed_count` + 1 WHERE `run_id` = NEW.`run_id`;
END;--> statement-breakpoint
CREATE TRIGGER `progress_committed_count` AFTER INSERT ON `progress` BEGIN
  UPDATE `progress` SET `committed_count` = (SELECT count(*) FROM `committed` c WHERE c.`run_id` = NEW.`run_id`)
    WHERE `run_id` = NEW.`run_id`;
END;
