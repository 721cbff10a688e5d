CREATE TABLE "step_streams" (
	"run_id" text NOT NULL,
	"step" integer NOT NULL,
	"attempt" integer NOT NULL,
	"seq" integer NOT NULL,
	"text" text NOT NULL,
	"at" double precision NOT NULL,
	CONSTRAINT "step_streams_run_id_step_attempt_seq_pk" PRIMARY KEY("run_id","step","attempt","seq")
);
