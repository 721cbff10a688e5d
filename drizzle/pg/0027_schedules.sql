CREATE TABLE "schedules" (
	"name" text PRIMARY KEY NOT NULL,
	"workflow" text NOT NULL,
	"cron" text NOT NULL,
	"time_zone" text NOT NULL,
	"input_json" text NOT NULL,
	"overlap" text NOT NULL,
	"catch_up" text NOT NULL,
	"catch_up_cap" integer NOT NULL,
	"paused" integer DEFAULT 0 NOT NULL,
	"source" text NOT NULL,
	"next_fire_at" double precision NOT NULL,
	"last_tick_at" double precision,
	"last_run_id" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL
);
--> statement-breakpoint
CREATE INDEX "schedules_due" ON "schedules" USING btree ("next_fire_at") WHERE "schedules"."paused" = 0;