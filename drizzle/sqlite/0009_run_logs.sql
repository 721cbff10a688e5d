CREATE TABLE `run_logs` (
	`run_id` text NOT NULL,
	`seq` integer NOT NULL,
	`at` real NOT NULL,
	`stream` text NOT NULL,
	`line` text NOT NULL,
	`worker_id` text,
	`attempt` integer,
	PRIMARY KEY(`run_id`, `seq`)
);
