CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"webhook_id" text NOT NULL,
	"event" text NOT NULL,
	"run_id" text,
	"payload_json" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" double precision NOT NULL,
	"lease_owner" text,
	"lease_expires_at" double precision,
	"last_status" integer,
	"last_error" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	"delivered_at" double precision
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"events_json" text NOT NULL,
	"secret" text NOT NULL,
	"paused" integer DEFAULT 0 NOT NULL,
	"in_doubt_seconds" integer DEFAULT 300 NOT NULL,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL
);
--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_webhook" ON "webhook_deliveries" USING btree ("webhook_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_created" ON "webhook_deliveries" USING btree ("created_at");