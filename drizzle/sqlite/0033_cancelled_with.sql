-- Which cancel took a cancelled child run. A retry of its parent brings back the children the parent's cancel took,
-- and it read which those were from the text of each child's newest operator event that made it cancelled: the
-- cascade's `cancel by <actor> (with its parent <parent>): <from> → cancelled`, or `cancelled as it was started: its
-- parent <parent> had been cancelled`. An actor's name is free text, so an operator named `mallory (with its parent
-- p)` cancelling p's child by hand wrote a cascade's line, and the child came back with p's retry; a rewording of
-- either line would have lost every retry. The cancel now writes the parent's id into runs.cancelled_with, in the
-- statement that moves the status, and every other move clears it (lib/store/sqlite/runs.ts ACT).
-- Set here once for the children already cancelled, by that same reading of their events (the <from> a cascade ever
-- wrote is one of the four statuses a cancel leaves), so an upgraded store's retries bring back what they did.
ALTER TABLE `runs` ADD `cancelled_with` text;--> statement-breakpoint
UPDATE `runs` SET `cancelled_with` = `parent_run_id` WHERE `id` IN (
  SELECT r.`id` FROM `runs` r
  JOIN `step_events` e ON e.`run_id` = r.`id` AND e.`outcome` = 'operator' AND substr(e.`detail`, 1, 6) = 'cancel'
  WHERE r.`status` = 'cancelled' AND r.`parent_run_id` IS NOT NULL
    -- e is the newest event that made the run cancelled: each such event's line begins with `cancel`.
    AND NOT EXISTS (SELECT 1 FROM `step_events` n WHERE n.`run_id` = r.`id` AND n.`outcome` = 'operator'
      AND substr(n.`detail`, 1, 6) = 'cancel' AND n.`id` > e.`id`)
    AND (e.`detail` = 'cancelled as it was started: its parent ' || r.`parent_run_id` || ' had been cancelled'
      OR (substr(e.`detail`, 1, 10) = 'cancel by ' AND EXISTS (
        SELECT 1 FROM (SELECT ' (with its parent ' || r.`parent_run_id` || '): ' || f.`s` || ' → cancelled' AS `tail`
          FROM (SELECT 'queued' AS `s` UNION ALL SELECT 'running' UNION ALL SELECT 'paused' UNION ALL SELECT 'waiting') f) c
        WHERE substr(e.`detail`, -length(c.`tail`)) = c.`tail`)))
);
