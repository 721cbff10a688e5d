ALTER TABLE "runs" ADD COLUMN "parent_run_id" text;--> statement-breakpoint
ALTER TABLE "runs" ADD COLUMN "detached" boolean DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX "runs_parent" ON "runs" USING btree ("parent_run_id") WHERE parent_run_id IS NOT NULL;