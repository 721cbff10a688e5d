ALTER TABLE "committed" ADD COLUMN "prior_step" integer;--> statement-breakpoint
ALTER TABLE "committed" ADD COLUMN "prior_state_json" text;--> statement-breakpoint
ALTER TABLE "committed_history" ADD COLUMN "prior_step" integer;--> statement-breakpoint
ALTER TABLE "committed_history" ADD COLUMN "prior_state_json" text;--> statement-breakpoint
ALTER TABLE "step_events" ADD COLUMN "attempt" integer;--> statement-breakpoint
ALTER TABLE "step_events" ADD COLUMN "max_attempts" integer;--> statement-breakpoint
ALTER TABLE "step_events" ADD COLUMN "retry_at" double precision;--> statement-breakpoint
ALTER TABLE "step_events" ADD COLUMN "previous_worker_id" text;--> statement-breakpoint
ALTER TABLE "step_events" ADD COLUMN "previous_attempt" integer;