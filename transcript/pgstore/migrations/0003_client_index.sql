-- The full-text index is computed by cairn (search.go): tsv becomes a
-- plain column, body keeps only the start of the text, for snippets.
-- Lines stored before are indexed again by the same rule (words are runs
-- of letters and digits), so old and new lines answer one query alike.
ALTER TABLE cairn_lines ALTER COLUMN tsv DROP EXPRESSION;
UPDATE cairn_lines SET tsv = to_tsvector('simple', regexp_replace(body, '[^[:alnum:]]+', ' ', 'g')),
	body = left(body, 4000);
-- lz4 compresses lines, indexes and files several times faster than
-- pglz; a server built without it keeps pglz.
DO $$
BEGIN
	ALTER TABLE cairn_lines ALTER COLUMN line SET COMPRESSION lz4;
	ALTER TABLE cairn_lines ALTER COLUMN tsv SET COMPRESSION lz4;
	ALTER TABLE cairn_sidecars ALTER COLUMN data SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
	NULL;
END $$;
