CREATE TABLE "claims" (
	"idem_key" text PRIMARY KEY NOT NULL,
	"run_id" text NOT NULL,
	"claimed_at" double precision NOT NULL,
	"token" text,
	"worker_id" text,
	"lease_expires_at" double precision,
	"heartbeat_at" double precision,
	"step" integer,
	"attempt" integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "committed" (
	"idem_key" text PRIMARY KEY NOT NULL,
	"run_id" text NOT NULL,
	"result_json" text NOT NULL,
	"committed_at" double precision NOT NULL,
	"step" integer,
	"fingerprint" text,
	"worker_id" text,
	"duration_ms" double precision,
	"source" text DEFAULT 'executed' NOT NULL
);
--> statement-breakpoint
CREATE TABLE "progress" (
	"run_id" text PRIMARY KEY NOT NULL,
	"step" integer NOT NULL,
	"state_json" text NOT NULL,
	"updated_at" double precision NOT NULL,
	"executed" integer DEFAULT 0 NOT NULL,
	"skipped" integer DEFAULT 0 NOT NULL,
	"awaited" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" text PRIMARY KEY NOT NULL,
	"workflow" text NOT NULL,
	"input_json" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"total_steps" integer,
	"owner" text,
	"lease_expires_at" double precision,
	"attempts" integer DEFAULT 0 NOT NULL,
	"error" text,
	"output_json" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	"started_at" double precision,
	"finished_at" double precision
);
--> statement-breakpoint
CREATE TABLE "step_events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "step_events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"run_id" text NOT NULL,
	"idem_key" text,
	"step" integer,
	"outcome" text NOT NULL,
	"count" integer DEFAULT 1 NOT NULL,
	"duration_ms" double precision,
	"worker_id" text,
	"detail" text,
	"at" double precision DEFAULT extract(epoch from now()) NOT NULL
);
--> statement-breakpoint
CREATE TABLE "workers" (
	"id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"pid" integer NOT NULL,
	"started_at" double precision NOT NULL,
	"heartbeat_at" double precision NOT NULL,
	"stopped_at" double precision
);
--> statement-breakpoint
CREATE INDEX "claims_run" ON "claims" USING btree ("run_id");--> statement-breakpoint
CREATE INDEX "committed_run_step" ON "committed" USING btree ("run_id","step");--> statement-breakpoint
CREATE INDEX "runs_status_updated" ON "runs" USING btree ("status","updated_at");--> statement-breakpoint
CREATE INDEX "runs_created" ON "runs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "step_events_run" ON "step_events" USING btree ("run_id","id");--> statement-breakpoint
CREATE INDEX "step_events_key" ON "step_events" USING btree ("idem_key");