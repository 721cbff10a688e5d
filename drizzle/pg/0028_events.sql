CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"data_json" text NOT NULL,
	"created_at" double precision NOT NULL
);
--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "events_json" text;--> statement-breakpoint
CREATE INDEX "events_name" ON "events" USING btree ("name","created_at");--> statement-breakpoint
CREATE INDEX "waits_open_event" ON "waits" USING btree ("name","created_at") WHERE "waits"."kind" = 'event' AND "waits"."decided_at" IS NULL;