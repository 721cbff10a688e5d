CREATE TABLE "run_logs" (
	"run_id" text NOT NULL,
	"seq" bigint NOT NULL,
	"at" double precision NOT NULL,
	"stream" text NOT NULL,
	"line" text NOT NULL,
	"worker_id" text,
	"attempt" integer,
	CONSTRAINT "run_logs_run_id_seq_pk" PRIMARY KEY("run_id","seq")
);
