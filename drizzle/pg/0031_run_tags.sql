CREATE TABLE "run_metadata" (
	"run_id" text NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "run_metadata_run_id_key_pk" PRIMARY KEY("run_id","key")
);
--> statement-breakpoint
CREATE TABLE "run_tags" (
	"run_id" text NOT NULL,
	"tag" text NOT NULL,
	CONSTRAINT "run_tags_run_id_tag_pk" PRIMARY KEY("run_id","tag")
);
--> statement-breakpoint
CREATE INDEX "run_metadata_key_value" ON "run_metadata" USING btree ("key","value","run_id");--> statement-breakpoint
CREATE INDEX "run_tags_tag" ON "run_tags" USING btree ("tag","run_id");