-- A concluded market can never trade again, so it leaves every client's stored
-- set in the same transaction that concludes it, whichever path wrote it. A
-- nested market concludes with its player-race, and one written under a
-- concluded player-race is born concluded.
CREATE INDEX client_markets_mid ON client_markets (mid);

CREATE FUNCTION forget_concluded_market() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.go OR EXISTS (SELECT 1 FROM markets p WHERE p.mid = NEW.parent_mid AND p.go) THEN
    DELETE FROM client_markets
     WHERE mid IN (SELECT NEW.mid UNION ALL SELECT n.mid FROM markets n WHERE n.parent_mid = NEW.mid);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER markets_concluded_insert AFTER INSERT ON markets
  FOR EACH ROW WHEN (NEW.go OR NEW.parent_mid IS NOT NULL) EXECUTE FUNCTION forget_concluded_market();
CREATE TRIGGER markets_concluded_update AFTER UPDATE OF go ON markets
  FOR EACH ROW WHEN (NEW.go AND NOT OLD.go) EXECUTE FUNCTION forget_concluded_market();
