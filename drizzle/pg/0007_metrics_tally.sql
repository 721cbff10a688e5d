CREATE TABLE "metrics_tally" (
	"bounds" text PRIMARY KEY NOT NULL,
	"committed_mark" double precision,
	"committed_mark_key" text,
	"committed_mark_at" double precision,
	"events_mark" double precision,
	"steps_json" text NOT NULL,
	"durations_json" text NOT NULL
);
