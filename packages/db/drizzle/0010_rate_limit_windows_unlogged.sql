-- Rate-limit counts are touched by every authenticated request. Unlogged, they write no
-- WAL and a request's count commits without waiting for a disk flush; a crash empties
-- the table, which only resets the current one-minute windows.
ALTER TABLE "rate_limit_windows" SET UNLOGGED;
