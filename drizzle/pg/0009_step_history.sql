CREATE TABLE "committed_history" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "committed_history_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"idem_key" text NOT NULL,
	"run_id" text NOT NULL,
	"result_json" text NOT NULL,
	"committed_at" double precision NOT NULL,
	"step" integer,
	"fingerprint" text,
	"worker_id" text,
	"duration_ms" double precision,
	"source" text NOT NULL,
	"forked_from" text,
	"input_json" text,
	"superseded_at" double precision NOT NULL,
	"superseded_by" text NOT NULL,
	"reason" text,
	"rerun" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "committed" ADD COLUMN "forked_from" text;--> statement-breakpoint
ALTER TABLE "committed" ADD COLUMN "input_json" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "forked_from_run" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "forked_at_step" integer;--> statement-breakpoint
CREATE INDEX "committed_history_run_step" ON "committed_history" USING btree ("run_id","step","id");--> statement-breakpoint
CREATE INDEX "step_events_run_step" ON "step_events" USING btree ("run_id","step");