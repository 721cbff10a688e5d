-- The step protocol's commit counts its own row in the progress write it makes anyway (lib/store/sqlite/steps.ts),
-- as PostgreSQL's waybill_commit does: the trigger's UPDATE wrote the run's progress row a second time every step.
-- A step's row is the one that goes in fresh (migration 0030); a row any other writer inserts is counted here as
-- before: a rerun's or a fork's, a claim resolved by hand, the reference article's own client.
DROP TRIGGER `committed_count_insert`;--> statement-breakpoint
CREATE TRIGGER `committed_count_insert` AFTER INSERT ON `committed` WHEN NEW.`fresh` IS NULL BEGIN
  UPDATE `progress` SET `committed_count` = `committed_count` + 1 WHERE `run_id` = NEW.`run_id`;
END;
