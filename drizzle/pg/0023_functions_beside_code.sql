-- From here on the PostgreSQL functions' current text lives beside the code that calls them
-- (lib/store/postgres/functions/), and opening a store applies it with CREATE OR REPLACE, after the migrations and
-- under their lock, when the version recorded here is older than the code's. The migrations that made them (0001, 0013,
-- 0015, 0017, 0018, 0019) stay as history.
--
-- The claim, the commit and the progress write each take one request object, the shape an element of the batch
-- functions' array has, instead of positional parameters (26 for a commit): a new signature, so the old ones go.
-- The batch functions keep theirs and are replaced as they are. Until the functions are applied, in this same
-- transaction, the batch functions call what is dropped here.
CREATE TABLE waybill_functions (version integer NOT NULL, hash text PRIMARY KEY, applied_at double precision NOT NULL);--> statement-breakpoint
DROP FUNCTION waybill_claim(text, text, text, text, int, int, float8, float8, float8, int);--> statement-breakpoint
DROP FUNCTION waybill_commit(text, text, text, text, int, text, text, float8, text, boolean, text, int, text,
  int, int, int, float8, text, text, text, text, int, int, float8, float8, float8, int);--> statement-breakpoint
DROP FUNCTION waybill_save_progress(text, int, text, int, int, int, float8, float8);
