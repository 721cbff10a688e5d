-- Runs with committed rows and neither a runs row nor a progress row, each with its latest commit (lone_runs). The
-- runs list found them by reading every commit since its page's floor, or every run of the store when the page was
-- short: 70 ms a request behind one run that had committed 300,000 steps since the page's last run, 170 ms for a
-- search that matched nothing among 100,000 runs. Now it reads the newest few from lone_runs_at.
-- Kept by triggers, so every writer keeps it, the reference article's client among them. A commit pays two
-- lookups by key (progress's, then runs') and writes here only when its run has neither row; a runs row or a
-- progress row made later takes the run out; its last committed row deleted takes it out; a runs or progress row
-- deleted while committed rows remain puts it back. `at` is the latest commit the run made: a row deleted alone
-- (never done to such a run by Waybill) leaves it where it was.
CREATE TABLE `lone_runs` (
	`run_id` text PRIMARY KEY NOT NULL,
	`at` real NOT NULL
);
--> statement-breakpoint
CREATE INDEX `lone_runs_at` ON `lone_runs` (`at`,`run_id`);--> statement-breakpoint
INSERT INTO `lone_runs` (`run_id`, `at`)
  SELECT c.`run_id`, max(c.`committed_at`) FROM `committed` c
  WHERE NOT EXISTS (SELECT 1 FROM `runs` r WHERE r.`id` = c.`run_id`)
    AND NOT EXISTS (SELECT 1 FROM `progress` p WHERE p.`run_id` = c.`run_id`)
  GROUP BY c.`run_id`;--> statement-breakpoint
CREATE TRIGGER `lone_runs_commit` AFTER INSERT ON `committed`
  WHEN NOT EXISTS (SELECT 1 FROM `progress` WHERE `run_id` = NEW.`run_id`)
    AND NOT EXISTS (SELECT 1 FROM `runs` WHERE `id` = NEW.`run_id`)
BEGIN
  INSERT INTO `lone_runs` (`run_id`, `at`) VALUES (NEW.`run_id`, NEW.`committed_at`)
    ON CONFLICT (`run_id`) DO UPDATE SET `at` = excluded.`at` WHERE excluded.`at` > `lone_runs`.`at`;
END;--> statement-breakpoint
CREATE TRIGGER `lone_runs_uncommit` AFTER DELETE ON `committed`
  WHEN EXISTS (SELECT 1 FROM `lone_runs` WHERE `run_id` = OLD.`run_id`)
BEGIN
  DELETE FROM `lone_runs` WHERE `run_id` = OLD.`run_id` AND NOT EXISTS (SELECT 1 FROM `committed` c
    WHERE (c.`run_id` = OLD.`run_id` AND c.`fresh` IS NOT NULL) OR (c.`run_id` = OLD.`run_id` AND c.`fresh` IS NULL));
END;--> statement-breakpoint
CREATE TRIGGER `lone_runs_move` AFTER UPDATE OF `run_id` ON `committed` WHEN OLD.`run_id` IS NOT NEW.`run_id` BEGIN
  DELETE FROM `lone_runs` WHERE `run_id` = OLD.`run_id` AND NOT EXISTS (SELECT 1 FROM `committed` c
    WHERE (c.`run_id` = OLD.`run_id` AND c.`fresh` IS NOT NULL) OR (c.`run_id` = OLD.`run_id` AND c.`fresh` IS NULL));
  INSERT INTO `lone_runs` (`run_id`, `at`) SELECT NEW.`run_id`, NEW.`committed_at`
    WHERE NOT EXISTS (SELECT 1 FROM `progress` WHERE `run_id` = NEW.`run_id`)
      AND NOT EXISTS (SELECT 1 FROM `runs` WHERE `id` = NEW.`run_id`)
    ON CONFLICT (`run_id`) DO UPDATE SET `at` = excluded.`at` WHERE excluded.`at` > `lone_runs`.`at`;
END;--> statement-breakpoint
CREATE TRIGGER `lone_runs_progress` AFTER INSERT ON `progress` BEGIN
  DELETE FROM `lone_runs` WHERE `run_id` = NEW.`run_id`;
END;--> statement-breakpoint
CREATE TRIGGER `lone_runs_run` AFTER INSERT ON `runs` BEGIN
  DELETE FROM `lone_runs` WHERE `run_id` = NEW.`id`;
END;--> statement-breakpoint
CREATE TRIGGER `lone_runs_progress_gone` AFTER DELETE ON `progress`
  WHEN NOT EXISTS (SELECT 1 FROM `runs` WHERE `id` = OLD.`run_id`)
BEGIN
  INSERT INTO `lone_runs` (`run_id`, `at`)
    SELECT OLD.`run_id`, m.`at` FROM (SELECT max(c.`committed_at`) AS `at` FROM `committed` c
      WHERE (c.`run_id` = OLD.`run_id` AND c.`fresh` IS NOT NULL) OR (c.`run_id` = OLD.`run_id` AND c.`fresh` IS NULL)) m
    WHERE m.`at` IS NOT NULL
    ON CONFLICT (`run_id`) DO NOTHING;
END;--> statement-breakpoint
CREATE TRIGGER `lone_runs_run_gone` AFTER DELETE ON `runs`
  WHEN NOT EXISTS (SELECT 1 FROM `progress` WHERE `run_id` = OLD.`id`)
BEGIN
  INSERT INTO `lone_runs` (`run_id`, `at`)
    SELECT OLD.`id`, m.`at` FROM (SELECT max(c.`committed_at`) AS `at` FROM `committed` c
      WHERE (c.`run_id` = OLD.`id` AND c.`fresh` IS NOT NULL) OR (c.`run_id` = OLD.`id` AND c.`fresh` IS NULL)) m
    WHERE m.`at` IS NOT NULL
    ON CONFLICT (`run_id`) DO NOTHING;
END;
