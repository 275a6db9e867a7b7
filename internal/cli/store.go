package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairn-dev/cairn/internal/gitinfo"
	"github.com/cairn-dev/cairn/internal/settings"
	"github.com/cairn-dev/cairn/session"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/pgstore"
)

// storeURL is the team store's address: CAIRN_STORE, else the setting
// sessionStore; "" when none is configured.
func storeURL(env Env, st *settings.Settings) string {
	if env.Getenv != nil {
		if u := env.Getenv("CAIRN_STORE"); u != "" {
			return u
		}
	}
	if st != nil {
		var u string
		if raw, ok := st.Raw["sessionStore"]; ok && json.Unmarshal(raw, &u) == nil {
			return u
		}
	}
	return ""
}

// teamStore is the team store of this project, opened on first use.
type teamStore struct {
	url     string
	project string
	once    sync.Once
	db      *pgstore.DB
	err     error
	// said is set once the person was told the store is behind.
	said sync.Once
}

// behind tells the person, once a run, that the store did not get this
// session's lines.
func (t *teamStore) behind(warn func(string), err error) {
	t.said.Do(func() {
		warn(fmt.Sprintf("the team store is behind (%v); this session is saved locally and `cairn sessions sync` sends it later", err))
	})
}

// newTeamStore returns the configured team store of the project at cwd,
// or nil when none is configured. Nothing connects until it is used.
func newTeamStore(env Env, st *settings.Settings) *teamStore {
	u := storeURL(env, st)
	if u == "" {
		return nil
	}
	return &teamStore{url: u, project: ProjectKey(env.Cwd)}
}

// teamStoreFor loads the settings of env's project and returns its team
// store, nil when none is configured.
func teamStoreFor(env Env) (*teamStore, error) {
	home, err := env.Home()
	if err != nil {
		return nil, err
	}
	st, err := settings.Load(home.Dir, env.Cwd)
	if err != nil {
		return nil, err
	}
	return newTeamStore(env, st), nil
}

// store connects (once) and returns the project's store.
func (t *teamStore) store(ctx context.Context) (*pgstore.Store, error) {
	t.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		t.db, t.err = pgstore.Open(ctx, t.url)
	})
	if t.err != nil {
		return nil, t.err
	}
	return t.db.Project(t.project), nil
}

func (t *teamStore) close() {
	if t != nil && t.db != nil {
		t.db.Close()
	}
}

// replicator returns the agent's hook that sends every transcript line to
// the team store behind the local file. When the store cannot be reached
// the session goes on locally and warn says so once.
// The session's sidecar files (files) go too, when it starts and ends.
func (t *teamStore) replicator(files transcript.Sidecars, warn func(string)) func(string, transcript.Appender, transcript.Source) transcript.Appender {
	return func(sessionID string, local transcript.Appender, before transcript.Source) transcript.Appender {
		return pgstore.Replicate(local, t.store, sessionID, before, files, func(err error) { t.behind(warn, err) })
	}
}

// fetch brings a session that is not on this disk down from the team
// store into this project's folder and returns its path. It returns
// session.ErrNotFound when the store does not have it either.
func (t *teamStore) fetch(ctx context.Context, home session.Home, cwd, id string) (string, error) {
	s, err := t.store(ctx)
	if err != nil {
		return "", err
	}
	if strings.ContainsRune(id, filepath.Separator) || strings.HasSuffix(id, ".jsonl") {
		return "", fmt.Errorf("%q: %w", id, session.ErrNotFound)
	}
	if _, err := s.Info(ctx, id); errors.Is(err, transcript.ErrNotFound) {
		return "", fmt.Errorf("session %q: %w here or in the team store", id, session.ErrNotFound)
	} else if err != nil {
		return "", err
	}
	path := home.Store(cwd).Path(id)
	if err := pgstore.Fetch(ctx, s, id, path); err != nil {
		return "", err
	}
	// A new local copy has no files of its own to keep: all come.
	if _, err := pgstore.FetchSidecars(ctx, s, sidecarsOf(home, filepath.Dir(path)), id); err != nil {
		return path, fmt.Errorf("session %s came down from the team store to %s, but not all its files (tool results, subagents, file history): %w; resuming it brings them", id, path, err)
	}
	return path, nil
}

// findSession resolves ref to a local transcript, bringing it down from
// the team store when it is not on this disk and a store is configured.
func findSession(ctx context.Context, env Env, home session.Home, ref string, stderr io.Writer) (string, error) {
	path, err := home.Find(env.Cwd, ref)
	if err == nil || !errors.Is(err, session.ErrNotFound) {
		return path, err
	}
	ts, serr := teamStoreFor(env)
	if serr != nil || ts == nil {
		return "", err
	}
	defer ts.close()
	p, ferr := ts.fetch(ctx, home, env.Cwd, ref)
	if ferr != nil && p != "" {
		fmt.Fprintln(stderr, "warning:", ferr) // the transcript came, some files did not
		return p, nil
	}
	if ferr != nil {
		if errors.Is(ferr, session.ErrNotFound) {
			return "", ferr
		}
		return "", fmt.Errorf("%w (and the team store could not be asked: %v)", err, ferr)
	}
	fmt.Fprintf(stderr, "cairn: session %s brought down from the team store to %s\n", ref, p)
	return p, nil
}

// ProjectKey names the project at cwd the same way on every machine: its
// git remote (origin, else the first remote) without scheme, user and
// ".git", else its folder's name.
func ProjectKey(cwd string) string {
	if root := gitinfo.Root(cwd); root != "" {
		if u := remoteURL(root); u != "" {
			return normaliseRemote(u)
		}
		return filepath.Base(root)
	}
	return filepath.Base(cwd)
}

func remoteURL(root string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", root, "remote", "-v").Output()
	if err != nil {
		return ""
	}
	first := ""
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if f[0] == "origin" {
			return f[1]
		}
		if first == "" {
			first = f[1]
		}
	}
	return first
}

// normaliseRemote makes the URL forms of one repository equal:
// https://host/a/b.git, ssh://git@host/a/b and git@host:a/b all give
// host/a/b.
func normaliseRemote(u string) string {
	u = strings.TrimSpace(u)
	if parsed, err := url.Parse(u); err == nil && parsed.Host != "" {
		u = parsed.Hostname() + "/" + strings.TrimPrefix(parsed.Path, "/")
	} else if at := strings.Index(u, "@"); at >= 0 && strings.Contains(u[at:], ":") {
		host, path, _ := strings.Cut(u[at+1:], ":")
		u = host + "/" + strings.TrimPrefix(path, "/")
	}
	return strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git")
}

// withTeamStore connects the session to the configured team store: its
// lines are replicated there, and a session to resume first takes the
// lines the store has beyond the local copy.
func (s *setup) withTeamStore(ctx context.Context, env Env, f *agentFlags, out io.Writer) error {
	ts := newTeamStore(env, s.settings)
	if ts == nil {
		return nil
	}
	stop := s.stop
	s.stop = func() { stop(); ts.close() }
	warn := func(w string) { fmt.Fprintln(out, "warning:", w) }
	if f.resume != "" && !f.pick {
		// A session brought down from the store was resolved to its
		// path already (findSession); one that was here may have gone on
		// on another machine since.
		ts.pull(ctx, s.home, f.resume, warn)
	}
	dir := s.home.ProjectDir(env.Cwd)
	if strings.HasSuffix(f.resume, ".jsonl") && filepath.IsAbs(f.resume) {
		dir = filepath.Dir(f.resume) // a session resumed from another folder
	}
	s.opts.Replicate = ts.replicator(sidecarsOf(s.home, dir), warn)
	return nil
}

// connectedStore returns the configured team store, connected; an error
// that says how to configure one when none is.
func connectedStore(ctx context.Context, env Env) (*teamStore, *pgstore.Store, error) {
	ts, err := teamStoreFor(env)
	if err != nil {
		return nil, nil, err
	}
	if ts == nil {
		return nil, nil, errors.New("no team store is configured: set CAIRN_STORE=postgres://… or the setting sessionStore")
	}
	s, err := ts.store(ctx)
	if err != nil {
		ts.close()
		return nil, nil, err
	}
	return ts, s, nil
}

// storeList lists the team store's sessions as local listings show them
// (with no path: they may not be on this disk).
func storeList(ctx context.Context, env Env, all bool) ([]session.Info, error) {
	ts, s, err := connectedStore(ctx, env)
	if err != nil {
		return nil, err
	}
	defer ts.close()
	return storeInfos(ctx, s, all)
}

// storeInfos is the store's listing in the shape of a local one.
func storeInfos(ctx context.Context, s *pgstore.Store, all bool) ([]session.Info, error) {
	list, err := s.List(ctx, all)
	if err != nil {
		return nil, err
	}
	out := make([]session.Info, len(list))
	for i, in := range list {
		out[i] = session.Info{SessionID: in.SessionID, Project: in.Project, Created: in.Created, Modified: in.Modified,
			Messages: int(in.Messages), Bytes: in.Bytes, FirstPrompt: in.FirstPrompt, LastPrompt: in.LastPrompt}
	}
	return out, nil
}

// storeSearch searches the team store's sessions.
func storeSearch(ctx context.Context, env Env, query string, all bool) ([]session.Match, error) {
	ts, s, err := connectedStore(ctx, env)
	if err != nil {
		return nil, err
	}
	defer ts.close()
	hits, err := s.Search(ctx, query, 100, all)
	if err != nil {
		return nil, err
	}
	out := make([]session.Match, len(hits))
	for i, h := range hits {
		out[i] = session.Match{SessionID: h.SessionID, UUID: h.UUID, Timestamp: h.Timestamp, Snippet: h.Snippet}
	}
	return out, nil
}

// pull brings the local transcript at path up to date with the team
// store's copy, when the session went on on another machine. A store that
// cannot be asked, or a copy that diverged, leaves the local file as it is
// and says so.
func (t *teamStore) pull(parent context.Context, home session.Home, path string, warn func(string)) {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	s, err := t.store(ctx)
	if err != nil {
		t.behind(warn, err) // the local copy is resumed
		return
	}
	id := trimJSONL(filepath.Base(path))
	n, err := pgstore.Pull(ctx, s, id, transcript.NewFileStore(filepath.Dir(path)))
	switch {
	case errors.Is(err, transcript.ErrNotFound):
		return
	case err != nil:
		warn(fmt.Sprintf("session %s: %v", id, err))
	case n > 0:
		warn(fmt.Sprintf("%d %s of session %s brought from the team store (it went on on another machine)", n, plural(n, "line", "lines"), id))
	}
	// Files may be bigger than lines: a longer wait of their own.
	fctx, fcancel := context.WithTimeout(parent, 30*time.Second)
	defer fcancel()
	rep, err := pgstore.FetchSidecars(fctx, s, sidecarsOf(home, filepath.Dir(path)), id)
	if err != nil {
		warn(fmt.Sprintf("session %s: its files (tool results, subagents, file history) could not all be brought from the team store: %v", id, err))
	}
	if len(rep.Kept) > 0 {
		warn(fmt.Sprintf("session %s: %s differ here and in the team store; this machine's copy is kept", id, strings.Join(rep.Kept, ", ")))
	}
}
