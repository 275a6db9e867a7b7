package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

func newServeCmd(env Env) *cobra.Command {
	var addr, storeFlag string
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:7420] [--store URL]",
		Short: "Serve the sessions (the local home's, or the team store's) over HTTP, read-only, with a web viewer",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			home, err := env.Home()
			if err != nil {
				return err
			}
			var sessions serve.Sessions = localSessions{home: home}
			where := home.Projects()
			if storeFlag != "" {
				db, err := pgstore.Open(ctx, storeFlag)
				if err != nil {
					return err
				}
				defer db.Close()
				sessions = storeSessions{db: db}
				where = "the team store"
			}
			token := env.Getenv("CAIRN_SERVE_TOKEN")
			if token == "" {
				b := make([]byte, 16)
				rand.Read(b)
				token = hex.EncodeToString(b)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (another cairn serve there? pick another with --addr)", addr, err)
			}
			// The offsets of big local sessions' events are kept between
			// runs, so a link into one's history costs a page from the
			// first request on (the store has indexes of its own).
			// A build stopped at shutdown is not kept (the next run does it).
			building, stop := context.WithCancel(ctx)
			defer stop()
			index := &serve.Index{Context: building}
			if storeFlag == "" {
				index.Dir = filepath.Join(home.Dir, "cache", "serve-index")
			}
			srv := &http.Server{Handler: serve.Handler(serve.Options{Sessions: sessions, Token: token, Index: index}), ReadHeaderTimeout: 10 * time.Second}
			// The local sessions' kept indexes are brought up to date in
			// the background (only the first run builds them all).
			go index.WarmAll(ctx, sessions)
			fmt.Fprintf(env.Stdout, "cairn serve: the sessions of %s at http://%s/?token=%s\n", where, ln.Addr(), token)
			go func() {
				<-ctx.Done()
				shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				srv.Shutdown(shut)
			}()
			err = srv.Serve(ln)
			stop()
			index.Wait() // stopped, not killed mid-save
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:7420", "the address to listen on (loopback unless you say otherwise)")
	cmd.Flags().StringVar(&storeFlag, "store", "", "serve the team store at this postgres:// URL instead of the local home")
	return cmd
}

// localSessions serves the sessions of a cairn home.
type localSessions struct{ home session.Home }

func (l localSessions) List(ctx context.Context, q serve.ListQuery) ([]serve.Info, string, error) {
	infos, err := session.List(ctx, l.home, session.ListOptions{All: true})
	if err != nil {
		return nil, "", err
	}
	if q.Query != "" {
		matches, err := session.Search(ctx, l.home, session.SearchOptions{Query: q.Query, All: true})
		if err != nil {
			return nil, "", err
		}
		hit := map[string]bool{}
		for _, m := range matches {
			hit[m.SessionID] = true
		}
		infos = slices.DeleteFunc(infos, func(in session.Info) bool { return !hit[in.SessionID] })
	}
	if q.Project != "" {
		infos = slices.DeleteFunc(infos, func(in session.Info) bool { return in.Project != q.Project })
	}
	return pageOf(infos, q)
}

// pageOf cuts a newest-first listing to the page after q.Cursor, in the
// server's shape (no local paths).
func pageOf(all []session.Info, q serve.ListQuery) ([]serve.Info, string, error) {
	start := 0
	if q.Cursor != "" {
		us, id, ok := strings.Cut(q.Cursor, "_")
		micro, err := strconv.ParseInt(us, 10, 64)
		if !ok || err != nil {
			return nil, "", serve.BadRequest(fmt.Errorf("bad cursor %q", q.Cursor))
		}
		start = len(all)
		for i, in := range all {
			if m := in.Modified.UnixMicro(); m < micro || m == micro && in.SessionID < id {
				start = i
				break
			}
		}
	}
	end := min(len(all), start+q.Limit)
	next := ""
	if end < len(all) {
		last := all[end-1]
		next = strconv.FormatInt(last.Modified.UnixMicro(), 10) + "_" + last.SessionID
	}
	out := make([]serve.Info, 0, end-start)
	for _, in := range all[start:end] {
		out = append(out, serve.Info{SessionID: in.SessionID, Project: in.Project, FirstPrompt: in.FirstPrompt, LastPrompt: in.LastPrompt,
			Created: in.Created, Modified: in.Modified, Messages: int64(in.Messages), Bytes: in.Bytes})
	}
	return out, next, nil
}

func (l localSessions) Source(ctx context.Context, id string) (transcript.Source, error) {
	if strings.ContainsAny(id, `/\`) || id == "" {
		return nil, fmt.Errorf("session %q: %w", id, serve.ErrNotFound)
	}
	path, err := l.home.Find("", id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, fmt.Errorf("session %q: %w", id, serve.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	store, key := transcript.FileStoreOf(path)
	return store.OpenSource(ctx, key)
}

// storeSessions serves the team store's sessions, every project's.
type storeSessions struct{ db *pgstore.DB }

func (s storeSessions) List(ctx context.Context, q serve.ListQuery) ([]serve.Info, string, error) {
	st := s.db.Project(q.Project)
	var want map[string]bool
	if q.Query != "" {
		hits, err := st.Search(ctx, q.Query, 1000, q.Project == "")
		if err != nil {
			return nil, "", err
		}
		want = map[string]bool{}
		for _, h := range hits {
			want[h.Project+"\x1f"+h.SessionID] = true
		}
	}
	list, err := storeInfos(ctx, st, q.Project == "")
	if err != nil {
		return nil, "", err
	}
	if want != nil {
		list = slices.DeleteFunc(list, func(in session.Info) bool { return !want[in.Project+"\x1f"+in.SessionID] })
	}
	return pageOf(list, q)
}

func (s storeSessions) Source(ctx context.Context, id string) (transcript.Source, error) {
	project, err := s.db.ProjectOf(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.db.Project(project).OpenSource(ctx, id)
}

// History implements serve.Pager: the store's indexes find the line of
// before and read back from it, a page at a time.
func (s storeSessions) History(ctx context.Context, id, before string, limit int) (serve.Page, error) {
	project, err := s.db.ProjectOf(ctx, id)
	if err != nil {
		return serve.Page{}, err
	}
	return storeHistory(ctx, s.db.Project(project), id, before, limit)
}

// storeHistory is the page of a session of st ending just before the
// event before (the newest when "").
func storeHistory(ctx context.Context, st *pgstore.Store, id, before string, limit int) (serve.Page, error) {
	from := int64(-1)
	if before != "" {
		seq, line, err := st.LineSeq(ctx, id, before)
		if errors.Is(err, transcript.ErrNotFound) || err == nil && !serve.IsEvent(line, before) {
			return serve.Page{}, serve.ErrUnknownBefore
		}
		if err != nil {
			return serve.Page{}, err
		}
		from = seq
	}
	if limit <= 0 || limit > serve.PageSize {
		limit = serve.PageSize
	}
	// A page and the line that says there is more, most often in one query.
	return serve.PageOf(limit, func(yield func([]byte) bool) error { return st.LinesBackward(ctx, id, from, limit+1, yield) })
}

// Tail implements serve.Tailer: the file, reading only what is appended.
func (l localSessions) Tail(ctx context.Context, id string, start func(), line func([]byte) error) error {
	if strings.ContainsAny(id, `/\`) || id == "" {
		return fmt.Errorf("session %q: %w", id, serve.ErrNotFound)
	}
	path, err := l.home.Find("", id)
	if errors.Is(err, session.ErrNotFound) {
		return fmt.Errorf("session %q: %w", id, serve.ErrNotFound)
	}
	if err != nil {
		return err
	}
	store, key := transcript.FileStoreOf(path)
	return store.Follow(ctx, key, 500*time.Millisecond, start, line)
}

// Tail implements serve.Tailer: the store notifies each append.
func (s storeSessions) Tail(ctx context.Context, id string, start func(), line func([]byte) error) error {
	project, err := s.db.ProjectOf(ctx, id)
	if err != nil {
		return err
	}
	return s.db.Project(project).Follow(ctx, id, start, line)
}
