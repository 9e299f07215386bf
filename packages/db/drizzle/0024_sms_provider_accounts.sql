-- An SMS channel's sender becomes its provider account (Twilio and Vonage webhooks find their
-- channel by it, and one number is connected once). PostgreSQL before 17 cannot change a
-- generated column's expression: the column is dropped (its unique index with it) and added
-- again, computed for every row, and the index is built again.
ALTER TABLE "channels" drop column "provider_account";--> statement-breakpoint
ALTER TABLE "channels" ADD COLUMN "provider_account" text GENERATED ALWAYS AS (case
        when provider = 'meta' and type = 'whatsapp' then settings->>'phone_number_id'
        when provider = 'meta' and type = 'messenger' then settings->>'page_id'
        when provider = 'meta' and type = 'instagram' then settings->>'instagram_account_id'
        when provider = 'smtp' and type = 'email' then lower(settings->>'address')
        when provider = 'twilio' and type = 'sms' then coalesce(settings->>'messaging_service_sid', settings->>'from')
        when provider = 'vonage' and type = 'sms' then
          case when settings->>'from' ~ '^[0-9]+$' then '+' || (settings->>'from') else settings->>'from' end
      end) STORED;--> statement-breakpoint
CREATE UNIQUE INDEX "channels_provider_account_key" ON "channels" USING btree ("provider_account","type");
