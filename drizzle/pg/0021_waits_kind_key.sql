ALTER TABLE "waits" DROP CONSTRAINT "waits_run_id_name_pk";--> statement-breakpoint
ALTER TABLE "waits" ADD CONSTRAINT "waits_run_id_kind_name_pk" PRIMARY KEY("run_id","kind","name");