-- Sessions of every project, one row each; lines hold the transcript.
CREATE TABLE cairn_sessions (
	project     text        NOT NULL,
	session_id  text        NOT NULL,
	created     timestamptz NOT NULL DEFAULT now(),
	modified    timestamptz NOT NULL DEFAULT now(),
	size        bigint      NOT NULL DEFAULT 0,
	next_seq    bigint      NOT NULL DEFAULT 0,
	messages    bigint      NOT NULL DEFAULT 0,
	first_prompt text       NOT NULL DEFAULT '',
	last_prompt  text       NOT NULL DEFAULT '',
	PRIMARY KEY (project, session_id)
);

-- One row a transcript line, exactly the bytes Claude Code's format has
-- (unknown fields kept), in order of seq.
CREATE TABLE cairn_lines (
	project    text   NOT NULL,
	session_id text   NOT NULL,
	seq        bigint NOT NULL,
	uuid       text,
	ts         timestamptz,
	line       bytea  NOT NULL,
	body       text   NOT NULL DEFAULT '',
	tsv        tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED,
	PRIMARY KEY (project, session_id, seq),
	FOREIGN KEY (project, session_id) REFERENCES cairn_sessions ON DELETE CASCADE
);
CREATE UNIQUE INDEX cairn_lines_uuid ON cairn_lines (project, session_id, uuid) WHERE uuid IS NOT NULL;
CREATE INDEX cairn_lines_tsv ON cairn_lines USING gin (tsv);

-- Files kept beside a session: tool results, subagent transcripts,
-- file-history backups. name is the path relative to the session's
-- sidecar root.
CREATE TABLE cairn_blobs (
	project    text  NOT NULL,
	session_id text  NOT NULL,
	name       text  NOT NULL,
	data       bytea NOT NULL,
	PRIMARY KEY (project, session_id, name),
	FOREIGN KEY (project, session_id) REFERENCES cairn_sessions ON DELETE CASCADE
);
