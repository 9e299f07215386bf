-- A page of a conversation reads its newest rows by messages_conversation_idx and stops
-- after a page. The planner only does so when it knows the conversation is large: with
-- the default statistics a busy conversation (far above the average) is estimated at a
-- few rows, and every page sorts the whole conversation instead. A longer list of the
-- most common values keeps the busy conversations' sizes known.
ALTER TABLE "messages" ALTER COLUMN "conversation_id" SET STATISTICS 1000;
