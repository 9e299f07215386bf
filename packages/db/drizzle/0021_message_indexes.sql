DROP INDEX "messages_attachment_idx";--> statement-breakpoint
DROP INDEX "messages_provider_id_idx";--> statement-breakpoint
CREATE INDEX "messages_attachment_idx" ON "messages" USING btree ("attachment_id") WHERE "messages"."attachment_id" is not null;--> statement-breakpoint
CREATE INDEX "messages_provider_id_idx" ON "messages" USING btree ("provider_message_id") WHERE "messages"."provider_message_id" is not null;--> statement-breakpoint
-- Room on each page for a status update of the same row (a heap-only tuple: no index entry when
-- no indexed column changes, as for `delivered` and `read`).
ALTER TABLE "messages" SET (fillfactor = 90);