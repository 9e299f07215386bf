-- A file's bytes are stored out of line without compression: images are re-encoded as
-- JPEG, PNG or WebP and most other files (PDF, audio, video) are compressed already, so
-- PostgreSQL's compression attempt (pglz) went through each whole file to save nothing:
-- 15 ms of an 880 KB JPEG's 35 ms insert. Rows stored before keep their form.
ALTER TABLE "attachment_contents" ALTER COLUMN "data" SET STORAGE EXTERNAL;
