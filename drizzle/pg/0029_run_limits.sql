DROP INDEX "runs_runnable";--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "priority" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "workflows" ADD COLUMN "limits_json" text;--> statement-breakpoint
CREATE INDEX "runs_started" ON "runs" USING btree ("workflow","started_at") WHERE started_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX "runs_runnable" ON "runs" USING btree ("priority" DESC NULLS LAST,"created_at","id" COLLATE "C") WHERE status IN ('queued', 'running', 'waiting');