package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/internal/serve"
	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

// memSessions serves the sessions of a memory store.
type memSessions struct{ store *transcript.MemStore }

func (m memSessions) List(ctx context.Context, q serve.ListQuery) ([]serve.Info, string, error) {
	infos, _ := m.store.Sessions(ctx)
	var out []serve.Info
	for _, in := range infos {
		out = append(out, serve.Info{SessionID: in.ID, Modified: in.ModTime, Bytes: in.Size})
	}
	return out, "", nil
}

func (m memSessions) Source(ctx context.Context, id string) (transcript.Source, error) {
	return m.store.OpenSource(ctx, id)
}

const token = "s3cret"

func newServer(t *testing.T, n int) (*httptest.Server, []transcript.Entry) {
	t.Helper()
	store := transcript.NewMemStore()
	es := transcripttest.Entries("s1", n)
	a, err := store.OpenAppender(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	// Side records between the lines are not events.
	for i := range es {
		a.Append(context.Background(), es[i:i+1], false)
		if i%7 == 0 {
			a.Append(context.Background(), []transcript.Entry{{Type: transcript.TypeLastPrompt, SessionID: "s1", LastPrompt: "x", LeafUUID: es[i].UUID}}, false)
		}
	}
	a.Close()
	srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: memSessions{store}, Token: token, Poll: 10 * time.Millisecond}))
	t.Cleanup(srv.Close)
	return srv, es
}

func get(t *testing.T, srv *httptest.Server, path, tok string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func uuidsOf(t *testing.T, page serve.Page) []string {
	var out []string
	for _, raw := range page.Events {
		e, err := transcript.DecodeEntry(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.UUID)
	}
	return out
}

func wantUUIDs(es []transcript.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.UUID)
	}
	return out
}

func TestHistoryPages(t *testing.T) {
	srv, es := newServer(t, 250)
	code, body := get(t, srv, "/api/sessions/s1/events", token)
	if code != 200 {
		t.Fatalf("newest page: %d %s", code, body)
	}
	var page serve.Page
	json.Unmarshal(body, &page)
	if diff := cmp.Diff(wantUUIDs(es[150:]), uuidsOf(t, page)); diff != "" {
		t.Errorf("newest page (-want +got):\n%s", diff)
	}
	if !page.HasMore || page.FirstID != es[150].UUID {
		t.Errorf("hasMore %v firstId %s", page.HasMore, page.FirstID)
	}
	_, body = get(t, srv, "/api/sessions/s1/events?before="+page.FirstID, token)
	json.Unmarshal(body, &page)
	if diff := cmp.Diff(wantUUIDs(es[50:150]), uuidsOf(t, page)); diff != "" {
		t.Errorf("second page (-want +got):\n%s", diff)
	}
	_, body = get(t, srv, "/api/sessions/s1/events?before="+page.FirstID, token)
	page = serve.Page{}
	json.Unmarshal(body, &page)
	if diff := cmp.Diff(wantUUIDs(es[:50]), uuidsOf(t, page)); diff != "" || page.HasMore {
		t.Errorf("last page hasMore %v (-want +got):\n%s", page.HasMore, diff)
	}
	// A request for 10⁹ events gets a page.
	_, body = get(t, srv, "/api/sessions/s1/events?limit=1000000000", token)
	json.Unmarshal(body, &page)
	if len(page.Events) != serve.PageSize {
		t.Errorf("limit 10⁹ gave %d events", len(page.Events))
	}
	_, body = get(t, srv, "/api/sessions/s1/events?limit=5", token)
	json.Unmarshal(body, &page)
	if diff := cmp.Diff(wantUUIDs(es[245:]), uuidsOf(t, page)); diff != "" {
		t.Errorf("limit 5 (-want +got):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	srv, _ := newServer(t, 3)
	for _, tt := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", 200},
		{"/api/sessions", "", 401},
		{"/api/sessions", "wrong", 401},
		{"/api/sessions/s1/events", "", 401},
		{"/api/sessions/s1/view", "wrong", 401},
		{"/", "", 401},
		{"/api/sessions", token, 200},
		{"/api/sessions/nope/events", token, 404},
		{"/api/sessions/nope/view", token, 404},
		{"/api/sessions/s1/events?before=not-an-id", token, 400},
		{"/api/sessions/s1/view", token, 200},
		{"/", token, 200},
	} {
		if code, body := get(t, srv, tt.path, tt.token); code != tt.want {
			t.Errorf("GET %s with %q: %d, want %d (%s)", tt.path, tt.token, code, tt.want, body)
		}
	}
	resp, err := http.Post(srv.URL+"/api/sessions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST: %d, want the server to take no writes", resp.StatusCode)
	}
}

func TestTokenCookie(t *testing.T) {
	srv, _ := newServer(t, 3)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("token link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("cookies %+v", cookies)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/sessions", nil)
	req.AddCookie(cookies[0])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with the cookie: %d", resp.StatusCode)
	}
	if resp, _ := client.Get(srv.URL + "/?token=wrong"); resp.StatusCode != 401 {
		t.Errorf("wrong token link: %d", resp.StatusCode)
	}
}

func TestStream(t *testing.T) {
	store := transcript.NewMemStore()
	es := transcripttest.Entries("s1", 4)
	a, _ := store.OpenAppender(context.Background(), "s1")
	a.Append(context.Background(), es[:2], true)
	srv := httptest.NewServer(serve.Handler(serve.Options{Sessions: memSessions{store}, Token: token, Poll: 5 * time.Millisecond}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/sessions/s1/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	a.Append(context.Background(), es[2:], true)
	buf := make([]byte, 0, 4096)
	for strings.Count(string(buf), "data: ") < 2 {
		chunk := make([]byte, 1024)
		n, err := resp.Body.Read(chunk)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, buf)
		}
		buf = append(buf, chunk[:n]...)
	}
	for _, e := range es[:2] {
		if strings.Contains(string(buf), `"uuid":"`+e.UUID+`"`) {
			t.Errorf("the tail sent an old line %s", e.UUID)
		}
	}
	for _, e := range es[2:] {
		if !strings.Contains(string(buf), e.UUID) {
			t.Errorf("the tail lacks %s: %q", e.UUID, buf)
		}
	}
}
