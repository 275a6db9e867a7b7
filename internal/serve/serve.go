// Package serve is cairn's read-only HTTP server over sessions: the paged
// history API (SPEC R7), session list and search, the resume view, a live
// tail as server-sent events, and the web viewer. Every route but
// /healthz needs the bearer token.
package serve

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/jsonl"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/transcript"
)

// PageSize is the history API's page size, default and most.
const PageSize = 100

// ErrNotFound is what a Sessions returns for a session it does not have.
var ErrNotFound = transcript.ErrNotFound

// Info is a session as the list shows it.
type Info struct {
	SessionID   string    `json:"sessionId"`
	Project     string    `json:"project"`
	FirstPrompt string    `json:"firstPrompt"`
	LastPrompt  string    `json:"lastPrompt"`
	Created     time.Time `json:"created"`
	Modified    time.Time `json:"modified"`
	Messages    int64     `json:"messages"`
	Bytes       int64     `json:"bytes"`
}

// ListQuery filters and pages a listing.
type ListQuery struct {
	Project string // "" for every project
	Query   string // full-text words; "" for all
	Limit   int
	Cursor  string // from a previous page's next
}

// Sessions is what the server shows: the sessions of a local home or of
// the team store. Implementations are safe for concurrent use; a missing
// session is an error wrapping ErrNotFound.
type Sessions interface {
	// List returns a page of sessions, newest first, and the cursor of
	// the next page ("" when this is the last).
	List(ctx context.Context, q ListQuery) (page []Info, next string, err error)
	// Source opens a session's transcript as it is now.
	Source(ctx context.Context, sessionID string) (transcript.Source, error)
}

// Tailer is a Sessions that follows a session as it grows, without
// reading it again: the team store through LISTEN/NOTIFY, the local home
// by reading only the bytes appended to the file.
type Tailer interface {
	// Tail calls start once the session is found and followed, then line
	// with each whole line appended from then on, in order, until ctx
	// ends (it then returns nil) or line fails. A missing session is an
	// error wrapping ErrNotFound, returned before start.
	Tail(ctx context.Context, sessionID string, start func(), line func([]byte) error) error
}

// Pager is a Sessions that reads history pages by an index of its own
// (the team store's, on (session, uuid) and (session, seq)) instead of
// from the whole transcript: a page costs a page wherever it is.
type Pager interface {
	// History is the package's History of the session: an error wrapping
	// ErrNotFound for a session it does not have, ErrUnknownBefore for a
	// before the session does not hold as an event.
	History(ctx context.Context, sessionID, before string, limit int) (Page, error)
}

// Options configure a server.
type Options struct {
	Sessions Sessions
	// Token is the bearer token every route but /healthz needs.
	Token string
	// Poll is how often a live tail looks for new lines when Sessions is
	// not a Tailer (default 500 ms).
	Poll time.Duration
	// Index is where the offsets of big sessions' events are kept (a new
	// one when nil): built in the background the first time a session is
	// opened or listed, then used by every link into its history.
	Index *Index
}

//go:embed web
var web embed.FS

// Handler returns the server's routes.
func Handler(o Options) http.Handler {
	if o.Poll == 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Index == nil {
		o.Index = &Index{}
	}
	s := &server{o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /api/sessions", s.auth(s.list))
	mux.HandleFunc("GET /api/sessions/{id}/events", s.auth(s.events))
	mux.HandleFunc("GET /api/sessions/{id}/view", s.auth(s.view))
	mux.HandleFunc("GET /api/sessions/{id}/stream", s.auth(s.stream))
	static, _ := fs.Sub(web, "web")
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /", s.viewer(files))
	return mux
}

type server struct {
	o       Options
	cursors Cursors
}

const cookieName = "cairn_token"

// authorized accepts the bearer token, or the viewer's cookie.
func (s *server) authorized(r *http.Request) bool {
	got := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		got = strings.TrimPrefix(h, "Bearer ")
	} else if c, err := r.Cookie(cookieName); err == nil {
		got = c.Value
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Token)) == 1
}

func (s *server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			httpError(w, http.StatusUnauthorized, "a bearer token is needed (the URL cairn serve printed has it)")
			return
		}
		h(w, r)
	}
}

// viewer serves the web viewer. /?token=T sets the cookie once and
// drops the token from the address.
func (s *server) viewer(files http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if t := r.URL.Query().Get("token"); t != "" {
			if subtle.ConstantTimeCompare([]byte(t), []byte(s.o.Token)) != 1 {
				httpError(w, http.StatusUnauthorized, "wrong token")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			target := r.URL.Path
			if len(q) > 0 {
				target += "?" + q.Encode()
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		if !s.authorized(r) {
			httpError(w, http.StatusUnauthorized, "open the URL cairn serve printed (it carries the token)")
			return
		}
		files.ServeHTTP(w, r)
	}
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func (s *server) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNotFound) {
		httpError(w, http.StatusNotFound, "no such session")
		return
	}
	httpError(w, http.StatusInternalServerError, err.Error())
}

func limitOf(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || n <= 0 || n > PageSize {
		return PageSize
	}
	return n
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, next, err := s.o.Sessions.List(r.Context(), ListQuery{Project: q.Get("project"), Query: q.Get("q"), Limit: limitOf(r), Cursor: q.Get("cursor")})
	if err != nil {
		var bad badRequest
		if errors.As(err, &bad) {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
		s.fail(w, err)
		return
	}
	if page == nil {
		page = []Info{}
	}
	// The newest big sessions listed are the likeliest to be opened.
	warmed := 0
	for _, in := range page {
		if warmed < listWarm && in.Bytes >= s.o.Index.min() {
			s.warm(in.SessionID)
			warmed++
		}
	}
	var nextp *string
	if next != "" {
		nextp = &next
	}
	writeJSON(w, struct {
		Sessions []Info  `json:"sessions"`
		Next     *string `json:"next"`
	}{page, nextp})
}

// listWarm is how many big sessions of a listed page have their index
// built (or extended) in the background.
const listWarm = 4

// badRequest marks a Sessions error caused by the request (a bad cursor).
type badRequest struct{ error }

// BadRequest wraps err so the server answers 400.
func BadRequest(err error) error { return badRequest{err} }

// Page is one page of a session's history.
type Page struct {
	Events  []json.RawMessage `json:"events"`
	FirstID string            `json:"firstId"`
	HasMore bool              `json:"hasMore"`
}

// ErrUnknownBefore is returned by History for a before id the session
// does not hold.
var ErrUnknownBefore = errors.New("no event with that id in this session")

// History returns the page of a session's history ending just before the
// event before (the newest page when before is ""): up to limit chain
// events, oldest first. It reads the transcript backwards and decodes only
// the lines it returns, so a page of a huge session costs a page.
func History(ctx context.Context, src transcript.Source, before string, limit int) (Page, error) {
	page, _, err := history(ctx, src, before, limit, nil)
	return page, err
}

// Cursors remembers where the pages it served begin — the byte span of
// each page's first event, by session and event id — so that the page
// before one it served reads back from there, not from the end: paging
// back through a big session costs a page at each step, not the distance
// from the end. A remembered span is checked against the line it names
// before use (a transcript replaced by a repair falls back to the scan).
// A zero Cursors is ready; it is safe for concurrent use.
type Cursors struct {
	mu    sync.Mutex
	spans map[cursorKey]span
	order []cursorKey // oldest first, for eviction
}

type cursorKey struct{ session, id string }

// span is a line's byte offset and length (newline excluded).
type span struct{ off, n int64 }

// maxCursors bounds what Cursors remembers.
const maxCursors = 4096

// History is History of the package, with the start of the page read
// from what c remembers of session, and the new page's start remembered.
func (c *Cursors) History(ctx context.Context, src transcript.Source, session, before string, limit int) (Page, error) {
	return c.page(ctx, src, session, before, limit, nil)
}

// page is History, asking locate (when not nil) for the line of before
// when c does not remember it: its span (checked before use; nil when
// unknown), or ErrUnknownBefore for an id src is known not to hold.
func (c *Cursors) page(ctx context.Context, src transcript.Source, session, before string, limit int, locate func() (*span, error)) (Page, error) {
	var from *span
	if before != "" {
		c.mu.Lock()
		if sp, ok := c.spans[cursorKey{session, before}]; ok {
			from = &sp
		}
		c.mu.Unlock()
		if from != nil && !lineIs(src, *from, before) {
			from = nil
		}
		if from == nil && locate != nil {
			sp, err := locate()
			if err != nil {
				return Page{}, err
			}
			if sp != nil && lineIs(src, *sp, before) {
				from = sp
			}
		}
	}
	page, first, err := history(ctx, src, before, limit, from)
	if err != nil || page.FirstID == "" {
		return page, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spans == nil {
		c.spans = map[cursorKey]span{}
	}
	k := cursorKey{session, page.FirstID}
	if _, ok := c.spans[k]; !ok {
		c.order = append(c.order, k)
		if len(c.order) > maxCursors {
			delete(c.spans, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.spans[k] = first
	return page, nil
}

// lineIs reports whether sp is a line (it begins the file or follows a
// newline) and that line is the event id.
func lineIs(src transcript.Source, sp span, id string) bool {
	if sp.off < 0 || sp.n <= 0 || sp.off+sp.n > src.Size() {
		return false
	}
	start := max(sp.off-1, 0)
	b := make([]byte, sp.off+sp.n-start)
	if _, err := src.ReadAt(b, start); err != nil {
		return false
	}
	if sp.off > 0 {
		if b[0] != '\n' {
			return false
		}
		b = b[1:]
	}
	got, ok := chainID(b)
	return ok && got == id
}

// history reads the page before the event before (the newest page when
// before is ""); from, when known, is the span of before's line, and the
// read starts just before it. It returns the span of the page's first
// event too.
func history(ctx context.Context, src transcript.Source, before string, limit int, from *span) (Page, span, error) {
	if limit <= 0 || limit > PageSize {
		limit = PageSize
	}
	var pat []byte
	if before != "" {
		pat = []byte(`"uuid":"` + before + `"`)
		if needsEscape(before) {
			pat = []byte(`"uuid"`) // its JSON text is not before's
		}
	}
	found := before == ""
	end := src.Size()
	if from != nil {
		found, end = true, from.off
	} else if sp, ok, err := seekBefore(ctx, src, before); err != nil {
		return Page{}, span{}, err
	} else if ok {
		found, end = true, sp.off
	}
	var rev []json.RawMessage
	var firstID string
	var first span
	page := Page{}
	back := jsonl.NewBackward(src, end, jsonl.DefaultBlock, jsonl.MaxLineBytes, nil)
	for {
		if err := ctx.Err(); err != nil {
			return Page{}, span{}, err
		}
		line, ok, err := back.Next()
		if err != nil {
			return Page{}, span{}, err
		}
		if !ok {
			break
		}
		if line.Torn {
			continue // being written, or cut by a crash
		}
		if !found {
			if bytes.Contains(line.Bytes, pat) {
				if id, ok := chainID(line.Bytes); ok && id == before {
					found = true
				}
			}
			continue
		}
		if !bytes.Contains(line.Bytes, []byte(`"uuid"`)) {
			continue
		}
		id, ok := chainID(line.Bytes)
		if !ok {
			continue
		}
		if len(rev) == limit {
			page.HasMore = true
			break
		}
		rev = append(rev, json.RawMessage(bytes.Clone(line.Bytes)))
		firstID, first = id, span{line.Offset, int64(len(line.Bytes))}
	}
	if !found {
		return Page{}, span{}, ErrUnknownBefore
	}
	page.Events = make([]json.RawMessage, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		page.Events = append(page.Events, rev[i])
	}
	page.FirstID = firstID
	return page, first, nil
}

// PageOf is the page History makes of lines given newest first, each
// whole, from just before the page's end: lines calls yield with each
// until yield returns false. Only the lines it keeps are decoded.
func PageOf(limit int, lines func(yield func(line []byte) bool) error) (Page, error) {
	if limit <= 0 || limit > PageSize {
		limit = PageSize
	}
	var rev []json.RawMessage
	page := Page{}
	err := lines(func(line []byte) bool {
		if !bytes.Contains(line, []byte(`"uuid"`)) {
			return true
		}
		id, ok := chainID(line)
		if !ok {
			return true
		}
		if len(rev) == limit {
			page.HasMore = true
			return false
		}
		rev = append(rev, json.RawMessage(bytes.Clone(line)))
		page.FirstID = id
		return true
	})
	if err != nil {
		return Page{}, err
	}
	page.Events = make([]json.RawMessage, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		page.Events = append(page.Events, rev[i])
	}
	return page, nil
}

// IsEvent reports whether line is the conversation event id: what a
// before must name.
func IsEvent(line []byte, id string) bool {
	got, ok := chainID(line)
	return ok && got == id
}

// chainID decodes the uuid of a conversation line.
func chainID(line []byte) (string, bool) {
	e, err := transcript.DecodeEntry(line)
	if err != nil || !e.IsChain() {
		return "", false
	}
	return e.UUID, true
}

func (s *server) events(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.o.Sessions.(Pager); ok {
		page, err := p.History(r.Context(), r.PathValue("id"), r.URL.Query().Get("before"), limitOf(r))
		s.sendPage(w, page, err)
		return
	}
	src, err := s.o.Sessions.Source(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	defer src.Close()
	id, before := r.PathValue("id"), r.URL.Query().Get("before")
	// A big session with no index yet has one built in the background,
	// once this page is sent (not competing with it). On the newest page
	// too: the person may page back or share a link into the history next.
	// The newest page only asks whether the index is there and current,
	// reading nothing: the build extends it, after.
	warm := before == "" && s.o.Index.wants(src) && !s.o.Index.current(src, id)
	lacked := false // the index had no line for before
	locate := func() (*span, error) {
		if !s.o.Index.wants(src) {
			return nil, nil
		}
		sp, found, ok := s.o.Index.lookup(r.Context(), src, id, before)
		switch {
		case !ok:
			warm = true
			return nil, nil
		case !found:
			// Rare (the server gave the link): the scan says whether
			// the file lacks it too, or was rewritten under the index.
			lacked = true
			return nil, nil
		}
		return &sp, nil
	}
	page, err := s.cursors.page(r.Context(), src, id, before, limitOf(r), locate)
	if lacked && err == nil {
		s.o.Index.forget(id) // stale: built again
		warm = true
	}
	if warm || s.o.Index.behind(id) {
		defer s.warm(id)
	}
	s.sendPage(w, page, err)
}

// sendPage answers with a page, or with what err says.
func (s *server) sendPage(w http.ResponseWriter, page Page, err error) {
	if errors.Is(err, ErrUnknownBefore) {
		httpError(w, http.StatusBadRequest, "before names no event of this session")
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	writePage(w, page)
}

// writePage sends a page as writeJSON would, the events as they are: each
// was decoded (checked) as an event already, and encoding/json would
// check every byte of them again — most of what sending a page costs.
func writePage(w http.ResponseWriter, p Page) {
	n := 64 + len(p.FirstID)
	for _, e := range p.Events {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"events":[`...)
	for i, e := range p.Events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, bytes.TrimSpace(e)...)
	}
	id, _ := json.Marshal(p.FirstID)
	b = append(b, `],"firstId":`...)
	b = append(b, id...)
	b = append(b, `,"hasMore":`...)
	b = strconv.AppendBool(b, p.HasMore)
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// warm builds the index of session id in the background.
func (s *server) warm(id string) {
	s.o.Index.warm(id, func(ctx context.Context) (transcript.Source, error) { return s.o.Sessions.Source(ctx, id) }, false)
}

func (s *server) view(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	src, err := s.o.Sessions.Source(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	defer src.Close()
	conv, err := transcript.Load(r.Context(), src, transcript.LoadOptions{})
	if err != nil {
		s.fail(w, err)
		return
	}
	msgs := conv.Messages()
	if msgs == nil {
		msgs = []model.Message{}
	}
	warnings := conv.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	writeJSON(w, struct {
		SessionID string          `json:"sessionId"`
		Messages  []model.Message `json:"messages"`
		Warnings  []string        `json:"warnings"`
	}{id, msgs, warnings})
}

// stream sends every line appended to the session from now on as a
// server-sent event, until the client goes away.
func (s *server) stream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	start := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, ": tailing "+id+"\n\n")
		fl.Flush()
	}
	if t, ok := s.o.Sessions.(Tailer); ok {
		started := false
		err := t.Tail(r.Context(), id, func() { started = true; start() }, func(line []byte) error {
			if len(bytes.TrimSpace(line)) > 0 {
				fmt.Fprintf(w, "data: %s\n\n", line)
				fl.Flush()
			}
			return r.Context().Err()
		})
		if err != nil && !started {
			s.fail(w, err)
		}
		return
	}
	src, err := s.o.Sessions.Source(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	off := src.Size()
	src.Close()
	start()
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		src, err := s.o.Sessions.Source(r.Context(), id)
		if err != nil {
			return
		}
		size := src.Size()
		if size > off {
			buf := make([]byte, size-off)
			n, _ := src.ReadAt(buf, off)
			buf = buf[:n]
			// Only whole lines: a line being written waits for the next tick.
			if end := bytes.LastIndexByte(buf, '\n'); end >= 0 {
				for l := range bytes.SplitSeq(buf[:end], []byte("\n")) {
					if len(bytes.TrimSpace(l)) > 0 {
						fmt.Fprintf(w, "data: %s\n\n", l)
					}
				}
				off += int64(end + 1)
				fl.Flush()
			}
		}
		src.Close()
	}
}
