-- Files kept beside a session: tool results, subagent transcripts,
-- file-history backups (see sidecar.go for the names). No foreign key: a
-- session's files may reach the store before its first line; removing a
-- session removes them. Size and digest are the server's, so a sync can
-- tell what changed without reading the data back. This replaces
-- cairn_blobs, which no cairn wrote to.
DROP TABLE cairn_blobs;
CREATE TABLE cairn_sidecars (
	project    text        NOT NULL,
	session_id text        NOT NULL,
	name       text        NOT NULL,
	data       bytea       NOT NULL,
	size       bigint      GENERATED ALWAYS AS (octet_length(data)) STORED,
	sha256     bytea       GENERATED ALWAYS AS (sha256(data)) STORED,
	modified   timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (project, session_id, name)
);
