CREATE INDEX "committed_run_order" ON "committed" USING btree ("run_id",coalesce("step", -1),"idem_key" COLLATE "C");--> statement-breakpoint
CREATE INDEX "committed_at" ON "committed" USING btree ("committed_at");--> statement-breakpoint
CREATE INDEX "progress_updated" ON "progress" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "runs_updated" ON "runs" USING btree ("updated_at");