// Package pgstore keeps transcripts in PostgreSQL: a transcript.Store whose
// sessions many machines share. Each line is stored as the bytes of
// Claude Code's JSON line (unknown fields kept), in order, indexed by
// (project, session, uuid), with a full-text index over prompts, replies
// and tool output.
//
// A DB is one connection pool; DB.Project gives the Store of one project.
// The schema is created and migrated on Open.
package pgstore

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
)

//go:embed migrations/*.sql
var migrations embed.FS

// ErrSchemaTooNew is returned by Open when the database was migrated by a
// newer cairn than this one.
var ErrSchemaTooNew = errors.New("the team store's schema is newer than this cairn knows; upgrade cairn on this machine")

// DB is a connection pool on a cairn team store. It is safe for concurrent
// use.
type DB struct {
	pool *pgxpool.Pool
}

// Open connects to the store at url (postgres://…) and brings its schema
// up to date. It fails fast when the server cannot be reached.
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("team store address %q: %w", redact(url), err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, storeError(url, err)
	}
	db := &DB{pool: pool}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, storeError(url, err)
	}
	return db, nil
}

// storeError names the store (without its password) and keeps a failed
// connection's reason to its last line: pgx lists every address it tried.
func storeError(url string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28") {
		return fmt.Errorf("team store %s: the server refused these credentials (%s): check the user and password in CAIRN_STORE or the setting sessionStore", redact(url), pe.Message)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		msg := strings.TrimSpace(err.Error())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
		return fmt.Errorf("team store %s: cannot connect: %s: %w", redact(url), msg, errUnavailable)
	}
	return fmt.Errorf("team store %s: %w", redact(url), err)
}

var errUnavailable = errors.New("is the server running and reachable?")

// Close closes every connection.
func (db *DB) Close() { db.pool.Close() }

// redact hides a password in a connection URL.
func redact(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		if at := strings.LastIndex(url, "@"); at > i {
			if colon := strings.Index(url[i+3:at], ":"); colon >= 0 {
				return url[:i+3+colon] + ":***" + url[at:]
			}
		}
	}
	return url
}

// migrate applies the embedded migrations not yet applied, in order, each
// in a transaction, serialised across processes by an advisory lock.
func (db *DB) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	const lockKey = 7_420_001 // cairn's migration lock
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS cairn_schema (version int PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create the schema table: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM cairn_schema`).Scan(&have); err != nil {
		return err
	}
	if have > len(names) {
		return fmt.Errorf("schema version %d, this cairn knows up to %d: %w", have, len(names), ErrSchemaTooNew)
	}
	for i, name := range names {
		version := i + 1
		if version <= have {
			continue
		}
		sql, err := migrations.ReadFile(name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO cairn_schema (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("apply %s: %w", name, err)
		}
	}
	return nil
}

// Project returns the store of one project. Projects are named so that the
// same repository has the same name on every machine (see ProjectKey).
func (db *DB) Project(name string) *Store { return &Store{db: db, project: name} }

// Store is the transcripts of one project in the team store. It
// implements transcript.Store; one Appender per session is open at a time
// across every machine sharing the store (a PostgreSQL advisory lock held
// by the appender's connection, released when it closes or dies).
type Store struct {
	db      *DB
	project string
}

var _ transcript.Store = (*Store)(nil)

// Project is the store's project name.
func (s *Store) Project() string { return s.project }

func validID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\`) || id == "." || id == ".." {
		return fmt.Errorf("invalid session id %q", id)
	}
	return nil
}

// OpenAppender implements transcript.Store.
func (s *Store) OpenAppender(ctx context.Context, sessionID string) (transcript.Appender, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	conn, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("team store: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, s.lockName(sessionID)).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("team store: lock session %s: %w", sessionID, err)
	}
	if !ok {
		conn.Release()
		return nil, fmt.Errorf("session %s in the team store (another machine or process is writing it): %w", sessionID, transcript.ErrLocked)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO cairn_sessions (project, session_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, s.project, sessionID); err != nil {
		unlock(conn, s.lockName(sessionID))
		return nil, fmt.Errorf("team store: create session %s: %w", sessionID, err)
	}
	return &appender{s: s, id: sessionID, conn: conn}, nil
}

func (s *Store) lockName(sessionID string) string {
	return "cairn-session/" + s.project + "/" + sessionID
}

func unlock(conn *pgxpool.Conn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, name); err != nil {
		// The lock lives on the connection: close it rather than return a
		// connection that still holds it to the pool.
		conn.Hijack().Close(ctx)
		return
	}
	conn.Release()
}

type appender struct {
	s    *Store
	id   string
	mu   sync.Mutex
	conn *pgxpool.Conn
}

// Append implements transcript.Appender. Every append is one transaction,
// so it is durable once it returns, whatever durable says. A line whose
// uuid the session already holds is skipped, so replaying lines (a sync
// after an outage) never doubles one.
func (a *appender) Append(ctx context.Context, entries []transcript.Entry, durable bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		return errors.New("append to a closed transcript")
	}
	if len(entries) == 0 {
		return nil
	}
	rows := make([]Line, len(entries))
	for i := range entries {
		b, err := entries[i].MarshalJSON()
		if err != nil {
			return err
		}
		rows[i] = lineOf(entries[i], b)
	}
	return insertLines(ctx, a.conn, a.s.project, a.id, rows)
}

// Close implements transcript.Appender: it releases the session's lock.
func (a *appender) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn == nil {
		return nil
	}
	unlock(a.conn, a.s.lockName(a.id))
	a.conn = nil
	return nil
}

// Line is one transcript line as the store keeps it.
type Line struct {
	UUID   string
	Time   time.Time
	Bytes  []byte
	Text   string          // the start of the searchable text, for snippets
	TSV    pgtype.TSVector // the searchable text's index
	Prompt string          // the text a person typed, if the line is a prompt
	Chain  bool            // a conversation message (counts in messages)
}

func lineOf(e transcript.Entry, b []byte) Line {
	l := Line{UUID: e.UUID, Time: e.Time(), Bytes: b, Chain: e.IsChain() && (e.Type == transcript.TypeUser || e.Type == transcript.TypeAssistant)}
	var body string
	body, l.Prompt = texts(&e)
	l.Text, l.TSV = snippetText(body), tsvectorOf(body)
	return l
}

// LineOf decodes one raw line for the store; a line that is not valid JSON
// is kept as it is, with no uuid and nothing to search.
func LineOf(raw []byte) Line {
	e, err := transcript.DecodeEntry(raw)
	if err != nil {
		return Line{Bytes: raw}
	}
	return lineOf(e, raw)
}

// snippetChars is how much of a line's text is kept for search snippets.
const snippetChars = 4000

func snippetText(body string) string {
	n := 0
	for i := range body {
		if n == snippetChars {
			return body[:i]
		}
		n++
	}
	return body
}

// texts returns the searchable text of an entry (message texts, tool
// inputs and results) and, for a typed prompt, its text.
func texts(e *transcript.Entry) (body, prompt string) {
	m, ok, err := e.DecodeMessage()
	if !ok || err != nil {
		return "", ""
	}
	var b strings.Builder
	toolResult := false
	var typed []string
	for _, blk := range m.Content {
		switch blk.Type {
		case "text":
			b.WriteString(blk.Text)
			typed = append(typed, blk.Text)
		case "tool_use":
			b.Write(blk.Input)
		case "tool_result":
			toolResult = true
			b.WriteString(resultText(blk.Content))
		}
		b.WriteByte('\n')
	}
	if e.Type == transcript.TypeUser {
		prompt, _ = session.TypedPrompt(e.IsMeta, e.IsCompactSummary, toolResult, typed)
	}
	body = b.String()
	const maxBody = 256 << 10 // tsvector's limit is 1 MB; keep the index small
	if len(body) > maxBody {
		body = strings.ToValidUTF8(body[:maxBody], "")
	}
	return strings.ReplaceAll(body, "\x00", ""), prompt
}

// resultText is the text of a tool_result's content: a string, or the
// text blocks of a list.
func resultText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, blk := range blocks {
		if blk.Type == "text" {
			b.WriteString(blk.Text)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// notifyChannel is where the store announces appends; the payload is
// the project and the session id, joined by U+001F.
const notifyChannel = "cairn_lines"

// querier is what insertLines needs of a connection or transaction.
type querier interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// insertLines appends rows to a session in one transaction: sequence
// numbers follow the session's, lines whose uuid is already there are
// skipped, the session's size, counts and prompts are updated, and
// listeners of the session's channel are notified.
func insertLines(ctx context.Context, q querier, project, id string, rows []Line) error {
	return pgx.BeginFunc(ctx, q, func(tx pgx.Tx) error {
		var next int64
		err := tx.QueryRow(ctx, `INSERT INTO cairn_sessions (project, session_id) VALUES ($1, $2)
			ON CONFLICT (project, session_id) DO UPDATE SET modified = cairn_sessions.modified
			RETURNING next_seq`, project, id).Scan(&next)
		if err != nil {
			return err
		}
		uuids := make([]*string, len(rows))
		lines := make([][]byte, len(rows))
		bodies := make([]string, len(rows))
		tsvs := make([]pgtype.TSVector, len(rows))
		times := make([]*time.Time, len(rows))
		seqs := make([]int64, len(rows))
		for i := range rows {
			if rows[i].UUID != "" {
				uuids[i] = &rows[i].UUID
			}
			if !rows[i].Time.IsZero() {
				times[i] = &rows[i].Time
			}
			lines[i], bodies[i], tsvs[i], seqs[i] = rows[i].Bytes, rows[i].Text, rows[i].TSV, next+int64(i)
		}
		res, err := tx.Query(ctx, `INSERT INTO cairn_lines (project, session_id, seq, uuid, ts, line, body, tsv)
			SELECT $1, $2, s, u, t, l, b, v FROM unnest($3::bigint[], $4::text[], $5::timestamptz[], $6::bytea[], $7::text[], $8::tsvector[]) AS x(s, u, t, l, b, v)
			ON CONFLICT DO NOTHING RETURNING seq`, project, id, seqs, uuids, times, lines, bodies, tsvs)
		if err != nil {
			return err
		}
		inserted, err := pgx.CollectRows(res, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(inserted) == 0 {
			return nil
		}
		slices.Sort(inserted)
		// A line skipped as a duplicate does not count.
		var size, msgs int64
		var first, last string
		for _, seq := range inserted {
			r := &rows[seq-next]
			size += int64(len(r.Bytes)) + 1
			if r.Chain {
				msgs++
			}
			if r.Prompt != "" {
				if first == "" {
					first = r.Prompt
				}
				last = r.Prompt
			}
		}
		_, err = tx.Exec(ctx, `UPDATE cairn_sessions SET next_seq = $3, size = size + $4, messages = messages + $5,
			modified = now(),
			first_prompt = CASE WHEN first_prompt = '' THEN $6 ELSE first_prompt END,
			last_prompt = CASE WHEN $7 = '' THEN last_prompt ELSE $7 END
			WHERE project = $1 AND session_id = $2`, project, id, next+int64(len(rows)), size, msgs, first, last)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify('`+notifyChannel+`', $1)`, project+"\x1f"+id)
		return err
	})
}

// OpenSource implements transcript.Store: the session's lines, in order,
// each followed by a newline, read at once into memory.
func (s *Store) OpenSource(ctx context.Context, sessionID string) (transcript.Source, error) {
	if err := validID(sessionID); err != nil {
		return nil, err
	}
	var exists bool
	if err := s.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cairn_sessions WHERE project = $1 AND session_id = $2)`, s.project, sessionID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("team store: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("session %s in the team store: %w", sessionID, transcript.ErrNotFound)
	}
	var buf bytes.Buffer
	if err := s.readLines(ctx, sessionID, -1, func(_ int64, line []byte) error {
		buf.Write(line)
		buf.WriteByte('\n')
		return nil
	}); err != nil {
		return nil, err
	}
	return memSource{bytes.NewReader(buf.Bytes())}, nil
}

// readLines calls fn for each line with seq > after, in order.
func (s *Store) readLines(ctx context.Context, sessionID string, after int64, fn func(seq int64, line []byte) error) error {
	rows, err := s.db.pool.Query(ctx, `SELECT seq, line FROM cairn_lines WHERE project = $1 AND session_id = $2 AND seq > $3 ORDER BY seq`, s.project, sessionID, after)
	if err != nil {
		return fmt.Errorf("team store: %w", err)
	}
	defer rows.Close()
	var seq int64
	var line []byte
	_, err = pgx.ForEachRow(rows, []any{&seq, &line}, func() error { return fn(seq, line) })
	if err != nil {
		return fmt.Errorf("team store: read session %s: %w", sessionID, err)
	}
	return nil
}

type memSource struct{ *bytes.Reader }

func (memSource) Close() error { return nil }

// Sessions implements transcript.Store.
func (s *Store) Sessions(ctx context.Context) ([]transcript.SessionInfo, error) {
	infos, err := s.List(ctx, false)
	if err != nil {
		return nil, err
	}
	out := make([]transcript.SessionInfo, len(infos))
	for i, in := range infos {
		out[i] = transcript.SessionInfo{ID: in.SessionID, Size: in.Bytes, ModTime: in.Modified}
	}
	return out, nil
}

// Remove implements transcript.Store: the session's lines and its
// sidecar files.
func (s *Store) Remove(ctx context.Context, sessionID string) error {
	var n int64
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		for _, table := range []string{"cairn_sidecars", "cairn_sessions"} {
			tag, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE project = $1 AND session_id = $2`, s.project, sessionID)
			if err != nil {
				return err
			}
			n += tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("team store: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("session %s in the team store: %w", sessionID, transcript.ErrNotFound)
	}
	return nil
}

// AppendRaw appends bytes as they are, one row per line (a trailing
// partial line becomes a row of its own): what a crash or another program
// leaves behind, for tests and for sync.
func (s *Store) AppendRaw(ctx context.Context, sessionID string, b []byte) error {
	var rows []Line
	for line := range bytes.SplitSeq(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		rows = append(rows, LineOf(slices.Clone(line)))
	}
	return insertLines(ctx, s.db.pool, s.project, sessionID, rows)
}

// SessionInfo is a session as the team store lists it.
type SessionInfo struct {
	SessionID   string    `json:"sessionId"`
	Project     string    `json:"project"`
	FirstPrompt string    `json:"firstPrompt"`
	LastPrompt  string    `json:"lastPrompt"`
	Created     time.Time `json:"created"`
	Modified    time.Time `json:"modified"`
	Messages    int64     `json:"messages"`
	Bytes       int64     `json:"bytes"`
	Lines       int64     `json:"-"`
}

// List returns the project's sessions (every project's with
// allProjects), newest first.
func (s *Store) List(ctx context.Context, allProjects bool) ([]SessionInfo, error) {
	where := "true"
	var args []any
	if !allProjects {
		where, args = "project = $1", []any{s.project}
	}
	q := `SELECT session_id, project, first_prompt, last_prompt, created, modified, messages, size, next_seq
		FROM cairn_sessions WHERE ` + where + ` ORDER BY modified DESC, session_id DESC`
	rows, err := s.db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("team store: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (SessionInfo, error) {
		var in SessionInfo
		err := r.Scan(&in.SessionID, &in.Project, &in.FirstPrompt, &in.LastPrompt, &in.Created, &in.Modified, &in.Messages, &in.Bytes, &in.Lines)
		return in, err
	})
	if err != nil {
		return nil, fmt.Errorf("team store: %w", err)
	}
	return out, nil
}

// Info returns one session's listing; ErrNotFound when missing.
func (s *Store) Info(ctx context.Context, sessionID string) (SessionInfo, error) {
	var in SessionInfo
	err := s.db.pool.QueryRow(ctx, `SELECT session_id, project, first_prompt, last_prompt, created, modified, messages, size, next_seq
		FROM cairn_sessions WHERE project = $1 AND session_id = $2`, s.project, sessionID).
		Scan(&in.SessionID, &in.Project, &in.FirstPrompt, &in.LastPrompt, &in.Created, &in.Modified, &in.Messages, &in.Bytes, &in.Lines)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, fmt.Errorf("session %s in the team store: %w", sessionID, transcript.ErrNotFound)
	}
	if err != nil {
		return in, fmt.Errorf("team store: %w", err)
	}
	return in, nil
}

// Hit is one search result.
type Hit struct {
	SessionID string    `json:"sessionId"`
	Project   string    `json:"project"`
	UUID      string    `json:"uuid"`
	Timestamp time.Time `json:"timestamp"`
	Snippet   string    `json:"snippet"`
}

// Search finds lines whose text matches query (words, "phrases", -not,
// or: web-search syntax; see tsqueryOf), newest first, at most limit
// (default 50).
func (s *Store) Search(ctx context.Context, query string, limit int, allProjects bool) ([]Hit, error) {
	if limit <= 0 {
		limit = 50
	}
	tsq, ok := tsqueryOf(query)
	if !ok {
		return []Hit{}, nil // no words: nothing matches
	}
	rows, err := s.db.pool.Query(ctx, `SELECT session_id, project, coalesce(uuid, ''), coalesce(ts, 'epoch'::timestamptz),
			ts_headline('simple', body, q, 'MaxWords=20, MinWords=8, StartSel=«, StopSel=»')
		FROM cairn_lines, CAST($1 AS tsquery) q
		WHERE tsv @@ q AND ($2 OR project = $3)
		ORDER BY ts DESC NULLS LAST LIMIT $4`, tsq, allProjects, s.project, limit)
	if err != nil {
		return nil, fmt.Errorf("team store: search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		var h Hit
		err := r.Scan(&h.SessionID, &h.Project, &h.UUID, &h.Timestamp, &h.Snippet)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("team store: search: %w", err)
	}
	return out, nil
}

// IsUnavailable reports an error that means the store could not be
// reached (as opposed to a refusal such as a lock or a missing session).
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, transcript.ErrLocked) || errors.Is(err, transcript.ErrNotFound) {
		return false
	}
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) || strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57")
}

// Exec runs one statement on the store (administration and tests).
func (db *DB) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := db.pool.Exec(ctx, sql, args...)
	return err
}

// QueryRow runs a query returning one row (administration and tests).
func (db *DB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return db.pool.QueryRow(ctx, sql, args...)
}

// ProjectOf returns the project of a session id (ids are UUIDs, unique
// across projects); ErrNotFound when no project has it.
func (db *DB) ProjectOf(ctx context.Context, sessionID string) (string, error) {
	var p string
	err := db.pool.QueryRow(ctx, `SELECT project FROM cairn_sessions WHERE session_id = $1 ORDER BY modified DESC LIMIT 1`, sessionID).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("session %s in the team store: %w", sessionID, transcript.ErrNotFound)
	}
	return p, err
}

// Follow calls start once it follows the session, then line with each
// line appended to it from then on, in order, until ctx ends (then it
// returns nil) or line fails. It waits on the store's notification of an
// append (LISTEN on one connection of its own) and reads only the new
// lines. A missing session returns ErrNotFound, before start.
func (s *Store) Follow(ctx context.Context, sessionID string, start func(), line func([]byte) error) error {
	if err := validID(sessionID); err != nil {
		return err
	}
	pooled, err := s.db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("team store: %w", err)
	}
	// A listening connection does not go back to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+notifyChannel); err != nil {
		return fmt.Errorf("team store: %w", err)
	}
	// The end is read after LISTEN, so no append falls between.
	var last int64
	err = conn.QueryRow(ctx, `SELECT next_seq - 1 FROM cairn_sessions WHERE project = $1 AND session_id = $2`, s.project, sessionID).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("session %s in the team store: %w", sessionID, transcript.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("team store: %w", err)
	}
	start()
	want := s.project + "\x1f" + sessionID
	for {
		n, err := conn.WaitForNotification(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("team store: follow session %s: %w", sessionID, err)
		}
		if n.Payload != want {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT seq, line FROM cairn_lines WHERE project = $1 AND session_id = $2 AND seq > $3 ORDER BY seq`, s.project, sessionID, last)
		if err != nil {
			return fmt.Errorf("team store: %w", err)
		}
		var seq int64
		var b []byte
		_, err = pgx.ForEachRow(rows, []any{&seq, &b}, func() error {
			last = seq
			return line(b)
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
