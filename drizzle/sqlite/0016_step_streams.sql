CREATE TABLE `step_streams` (
	`run_id` text NOT NULL,
	`step` integer NOT NULL,
	`attempt` integer NOT NULL,
	`seq` integer NOT NULL,
	`text` text NOT NULL,
	`at` real NOT NULL,
	PRIMARY KEY(`run_id`, `step`, `attempt`, `seq`)
);
