-- Rate-limit counters are the hottest row of every request: one per organization and
-- minute, updated by every API call. Unlogged, an update needs no WAL flush at commit,
-- so the row lock is held for microseconds instead of a disk sync. A crash loses at most
-- the current minute's counts (the table is emptied on recovery): acceptable for a rate
-- limit, and it stays shared by every API process.
ALTER TABLE "rate_limit_windows" SET UNLOGGED;
