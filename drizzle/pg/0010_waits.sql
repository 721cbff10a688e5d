CREATE TABLE "waits" (
	"run_id" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"details_json" text,
	"created_at" double precision NOT NULL,
	"due_at" double precision,
	"on_timeout" text,
	"decided_at" double precision,
	"decision_json" text,
	"decided_by" text,
	"note" text,
	CONSTRAINT "waits_run_id_name_pk" PRIMARY KEY("run_id","name")
);
--> statement-breakpoint
CREATE INDEX "waits_due" ON "waits" USING btree ("due_at");