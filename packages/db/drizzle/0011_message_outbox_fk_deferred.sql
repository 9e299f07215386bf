-- A send writes its message and its outbox row in one round trip; the two statements may
-- reach the server in either order. The reference is checked at commit instead.
ALTER TABLE "message_outbox" ALTER CONSTRAINT "message_outbox_message_id_messages_id_fk" DEFERRABLE INITIALLY DEFERRED;
