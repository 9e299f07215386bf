-- Every organization's test environment has one sandbox channel of each type.
-- New organizations get theirs when they are created; this backfills the existing ones.
-- A session-scoped ULID generator: nothing stays in the schema afterwards.
CREATE FUNCTION pg_temp.parley_ulid() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  alphabet text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  remaining bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  result text := '';
BEGIN
  FOR i IN 1..10 LOOP
    result := substr(alphabet, (remaining % 32)::int + 1, 1) || result;
    remaining := remaining / 32;
  END LOOP;
  FOR i IN 1..16 LOOP
    result := result || substr(alphabet, floor(random() * 32)::int + 1, 1);
  END LOOP;
  RETURN result;
END
$$;
--> statement-breakpoint
INSERT INTO "channels" ("id", "organization_id", "environment", "type", "name", "provider")
SELECT 'chn_' || pg_temp.parley_ulid(), o."id", 'test', t."type", t."name", 'sandbox'
FROM "organizations" o
CROSS JOIN (VALUES
  ('whatsapp', 'Sandbox WhatsApp'),
  ('instagram', 'Sandbox Instagram'),
  ('messenger', 'Sandbox Messenger'),
  ('email', 'Sandbox email'),
  ('webchat', 'Sandbox web chat')
) AS t("type", "name")
ON CONFLICT DO NOTHING;
