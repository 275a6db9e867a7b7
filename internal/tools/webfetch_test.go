package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/tool"
)

// fetchEnv is an environment whose clock stands still, so durationMs is 0.
func fetchEnv(t *testing.T) *tool.Env {
	env := newEnv(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	env.Now = func() time.Time { return t0 }
	return env
}

// site serves the pages in routes (path → handler) and counts requests.
func site(t *testing.T, routes map[string]http.HandlerFunc) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	for p, h := range routes {
		mux.HandleFunc(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func serve(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		fmt.Fprint(w, body)
	}
}

func redirect(to string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, code) }
}

func fetch(t *testing.T, w WebFetch, u string) (string, tool.Result) {
	t.Helper()
	r := call(t, w, fetchEnv(t), map[string]any{"url": u, "prompt": "What does it say?"})
	return text(t, r), r
}

const notesPage = `<!doctype html><html><head><title>T</title><style>p{color:red}</style><script>alert("x")</script></head>
<body><h1>Release notes</h1><p>Version <b>2.0</b> adds <a href="/docs/new">new things</a>.</p>
<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></body></html>`

func TestWebFetchHTML(t *testing.T) {
	srv := site(t, map[string]http.HandlerFunc{"/notes": serve("text/html; charset=utf-8", notesPage)})
	got, r := fetch(t, WebFetch{}, srv.URL+"/notes#section")
	if r.IsError {
		t.Fatal(got)
	}
	head := "URL: " + srv.URL + "/notes\nPrompt: What does it say?\n\nThe page (converted from HTML to Markdown) follows."
	if !strings.HasPrefix(got, head) {
		t.Errorf("result starts %q, want %q", got[:min(len(got), len(head))], head)
	}
	for _, want := range []string{"# Release notes", "Version **2.0** adds [new things](" + srv.URL + "/docs/new).", "| a | b |"} {
		if !strings.Contains(got, want) {
			t.Errorf("result lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"alert", "color:red", "<p>"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("result holds %q:\n%s", unwanted, got)
		}
	}
	want := map[string]any{"bytes": float64(len(notesPage)), "code": 200.0, "codeText": "OK", "result": got, "durationMs": 0.0, "url": srv.URL + "/notes"}
	if diff := cmp.Diff(want, detail(t, r)); diff != "" {
		t.Errorf("detail (-want +got):\n%s", diff)
	}
}

func TestWebFetchContent(t *testing.T) {
	latin1 := string([]byte{'c', 'a', 'f', 0xe9})
	tests := []struct {
		name        string
		contentType string
		body        string
		want        string // in the result
		wantErr     string // in an error result instead
	}{
		{name: "plain text as it is", contentType: "text/plain", body: "# not a heading\n<b>raw</b>", want: "content (text/plain) follows.", wantErr: ""},
		{name: "JSON as it is", contentType: "application/json", body: `{"version":"2.0"}`, want: `{"version":"2.0"}`},
		{name: "problem JSON", contentType: "application/problem+json", body: `{"title":"x"}`, want: `{"title":"x"}`},
		{name: "markdown", contentType: "text/markdown", body: "## Usage\n", want: "## Usage\n"},
		{name: "no content type, sniffed as HTML", body: "<html><body><h2>Hi</h2></body></html>", want: "## Hi"},
		{name: "latin-1", contentType: "text/plain; charset=ISO-8859-1", body: latin1, want: "café"},
		{name: "bad UTF-8 replaced", contentType: "text/plain", body: "a\xffb", want: "a\uFFFDb"},
		{name: "an image is refused", contentType: "image/png", body: "\x89PNG\r\n\x1a\n\x00\x00", wantErr: "is image/png (10 bytes), not text"},
		{name: "a PDF is refused", contentType: "application/pdf", body: "%PDF-1.7", wantErr: "is application/pdf"},
		{name: "octet-stream sniffed as binary", contentType: "application/octet-stream", body: "\x00\x01\x02\x03", wantErr: "not text"},
		{name: "text with NUL bytes is binary", contentType: "text/plain", body: "abc\x00def", wantErr: "not text"},
		{name: "HTML with NUL bytes is binary", contentType: "text/html", body: "<p>\x00</p>", wantErr: "not text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := site(t, map[string]http.HandlerFunc{"/f": func(w http.ResponseWriter, _ *http.Request) {
				w.Header()["Content-Type"] = nil // no sniffing by the server
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				fmt.Fprint(w, tt.body)
			}})
			got, r := fetch(t, WebFetch{}, srv.URL+"/f")
			switch {
			case tt.wantErr != "":
				if !r.IsError || !strings.Contains(got, tt.wantErr) {
					t.Errorf("got %q (error %v), want an error containing %q", got, r.IsError, tt.wantErr)
				}
			case r.IsError || !strings.Contains(got, tt.want):
				t.Errorf("got %q (error %v), want it to contain %q", got, r.IsError, tt.want)
			}
		})
	}
}

func TestWebFetchRedirects(t *testing.T) {
	hops := func(prefix string, n int, last http.HandlerFunc) map[string]http.HandlerFunc {
		routes := map[string]http.HandlerFunc{}
		for i := range n {
			routes[fmt.Sprintf("/%s%d", prefix, i)] = redirect(fmt.Sprintf("/%s%d", prefix, i+1), http.StatusFound)
		}
		routes[fmt.Sprintf("/%s%d", prefix, n)] = last
		return routes
	}
	t.Run("a chain within the host is followed", func(t *testing.T) {
		srv := site(t, hops("r", WebFetchMaxRedirects, serve("text/plain", "arrived")))
		got, r := fetch(t, WebFetch{}, srv.URL+"/r0")
		if r.IsError || !strings.Contains(got, "arrived") {
			t.Fatalf("got %q", got)
		}
		if d := r.Detail.(webFetchDetail); d.URL != fmt.Sprintf("%s/r%d", srv.URL, WebFetchMaxRedirects) || d.Code != 200 {
			t.Errorf("detail %+v", d)
		}
	})
	t.Run("too many redirects", func(t *testing.T) {
		srv := site(t, hops("r", WebFetchMaxRedirects+1, serve("text/plain", "arrived")))
		got, r := fetch(t, WebFetch{}, srv.URL+"/r0")
		if !r.IsError || !strings.Contains(got, "redirected more than 5 times") {
			t.Errorf("got %q (error %v)", got, r.IsError)
		}
	})
	t.Run("a loop", func(t *testing.T) {
		srv := site(t, map[string]http.HandlerFunc{"/x": redirect("/y", http.StatusMovedPermanently), "/y": redirect("/x", http.StatusMovedPermanently)})
		got, r := fetch(t, WebFetch{}, srv.URL+"/x")
		if !r.IsError || !strings.Contains(got, "redirects in a loop") {
			t.Errorf("got %q (error %v)", got, r.IsError)
		}
	})
	t.Run("another host is reported, not followed", func(t *testing.T) {
		var other int
		elsewhere := site(t, map[string]http.HandlerFunc{"/": func(http.ResponseWriter, *http.Request) { other++ }})
		target := elsewhere.URL + "/moved?q=1"
		srv := site(t, map[string]http.HandlerFunc{"/old": redirect(target, http.StatusMovedPermanently)})
		got, r := fetch(t, WebFetch{}, srv.URL+"/old")
		if r.IsError || other != 0 {
			t.Fatalf("got %q (error %v), %d requests to the other host", got, r.IsError, other)
		}
		for _, want := range []string{"redirects (HTTP 301 Moved Permanently) to a different host: " + target, "url: " + target, "prompt: What does it say?"} {
			if !strings.Contains(got, want) {
				t.Errorf("result lacks %q:\n%s", want, got)
			}
		}
		if d := r.Detail.(webFetchDetail); d.Code != 301 || d.URL != srv.URL+"/old" || d.Result != got {
			t.Errorf("detail %+v", d)
		}
	})
	t.Run("a redirect to another scheme", func(t *testing.T) {
		srv := site(t, map[string]http.HandlerFunc{"/f": redirect("ftp://files.example/x", http.StatusFound)})
		got, r := fetch(t, WebFetch{}, srv.URL+"/f")
		if !r.IsError || !strings.Contains(got, "not an http or https URL") {
			t.Errorf("got %q (error %v)", got, r.IsError)
		}
	})
}

func TestSameSite(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"https://example.com/a", "https://example.com/b", true},
		{"https://example.com/a", "https://www.example.com/b", true},
		{"https://www.example.com/a", "https://EXAMPLE.com/b", true},
		{"http://example.com/a", "https://example.com/a", true},
		{"https://example.com/a", "http://example.com/a", false},
		{"https://example.com/a", "https://docs.example.com/a", false},
		{"https://example.com/a", "https://example.com:8443/a", false},
		{"https://example.com/a", "https://example.com:443/a", true},
		{"http://example.com:8080/a", "https://example.com:8080/a", false},
		{"https://example.com/a", "https://user:pw@example.com/a", false},
	}
	for _, tt := range tests {
		from, _ := url.Parse(tt.from)
		to, _ := url.Parse(tt.to)
		if got := sameSite(from, to); got != tt.want {
			t.Errorf("sameSite(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestWebFetchLimits(t *testing.T) {
	t.Run("a huge body is read in part and cut", func(t *testing.T) {
		chunk := strings.Repeat("0123456789abcdef", 1<<12) // 64 KB
		srv := site(t, map[string]http.HandlerFunc{"/big": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for range (WebFetchMaxBytes / len(chunk)) + 16 {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		}})
		got, r := fetch(t, WebFetch{}, srv.URL+"/big")
		if r.IsError {
			t.Fatal(got)
		}
		for _, want := range []string{"[Cut here: the text is 10485760 characters long and WebFetch returns at most 100000.]", "[WebFetch read only the first 10 MB of the response.]"} {
			if !strings.Contains(got, want) {
				t.Errorf("result lacks %q", want)
			}
		}
		if len(got) > WebFetchMaxChars+1000 {
			t.Errorf("result is %d bytes", len(got))
		}
		if d := r.Detail.(webFetchDetail); d.Bytes != WebFetchMaxBytes {
			t.Errorf("bytes = %d", d.Bytes)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		srv := site(t, map[string]http.HandlerFunc{"/slow": func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done() // until the client gives up
		}})
		got, r := fetch(t, WebFetch{Timeout: 50 * time.Millisecond}, srv.URL+"/slow")
		if !r.IsError || !strings.Contains(got, "took longer than 50ms and was stopped") {
			t.Errorf("got %q (error %v)", got, r.IsError)
		}
	})
	t.Run("a cancelled call returns the error", func(t *testing.T) {
		srv := site(t, map[string]http.HandlerFunc{"/slow": func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := WebFetch{}.Run(ctx, fetchEnv(t), rawInput(t, map[string]any{"url": srv.URL + "/slow", "prompt": "p"}))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestWebFetchErrors(t *testing.T) {
	srv := site(t, map[string]http.HandlerFunc{"/gone": func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<h1>No such page</h1>")
	}})
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name, url, want string
	}{
		{"not found", srv.URL + "/gone", "answered HTTP 404 Not Found.\n\n# No such page"},
		{"nobody listening", closed.URL + "/", "cannot fetch " + closed.URL + "/"},
		{"ftp", "ftp://example.com/f", "only http and https URLs"},
		{"no scheme", "example.com/page", "only http and https URLs"},
		{"no host", "https:///path", "names no host"},
		{"credentials", "https://me:secret@example.com/", "does not send credentials"},
		{"too long", "https://example.com/" + strings.Repeat("a", 2000), "at most 2000"},
		{"empty", " ", "url is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r := fetch(t, WebFetch{}, tt.url)
			if !r.IsError || !strings.Contains(got, tt.want) {
				t.Errorf("got %q (error %v), want an error containing %q", got, r.IsError, tt.want)
			}
		})
	}
}

// routed is a transport that sends every request to the test servers: port
// 443 to secure (refused when it is nil), any other to plain.
func routed(plain, secure *httptest.Server, dialed *[]string) http.RoundTripper {
	base := http.DefaultTransport.(*http.Transport)
	if secure != nil {
		base = secure.Client().Transport.(*http.Transport)
	}
	tr := base.Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		*dialed = append(*dialed, addr)
		_, port, _ := net.SplitHostPort(addr)
		target := plain.Listener.Addr().String()
		if port == "443" {
			if secure == nil {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			target = secure.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, target)
	}
	return tr
}

func TestWebFetchUpgradesToHTTPS(t *testing.T) {
	plain := site(t, map[string]http.HandlerFunc{"/": serve("text/plain", "over http")})
	secure := httptest.NewTLSServer(serve("text/plain", "over https"))
	t.Cleanup(secure.Close)

	t.Run("the host speaks https", func(t *testing.T) {
		var dialed []string
		got, r := fetch(t, WebFetch{Transport: routed(plain, secure, &dialed)}, "http://example.com/doc")
		if r.IsError || !strings.Contains(got, "over https") || !strings.HasPrefix(got, "URL: https://example.com/doc\n") {
			t.Fatalf("got %q", got)
		}
		if diff := cmp.Diff([]string{"example.com:443"}, dialed); diff != "" {
			t.Errorf("dialed (-want +got):\n%s", diff)
		}
	})
	t.Run("the host does not", func(t *testing.T) {
		var dialed []string
		got, r := fetch(t, WebFetch{Transport: routed(plain, nil, &dialed)}, "http://example.com/doc")
		if r.IsError || !strings.Contains(got, "over http") || !strings.HasPrefix(got, "URL: http://example.com/doc\n") {
			t.Fatalf("got %q", got)
		}
		if diff := cmp.Diff([]string{"example.com:443", "example.com:80"}, dialed); diff != "" {
			t.Errorf("dialed (-want +got):\n%s", diff)
		}
	})
	t.Run("an explicit port is kept", func(t *testing.T) {
		var dialed []string
		got, r := fetch(t, WebFetch{Transport: routed(plain, secure, &dialed)}, "http://example.com:8080/doc")
		if r.IsError || !strings.Contains(got, "over http") {
			t.Fatalf("got %q", got)
		}
		if diff := cmp.Diff([]string{"example.com:8080"}, dialed); diff != "" {
			t.Errorf("dialed (-want +got):\n%s", diff)
		}
	})
}

func TestWebFetchSummarize(t *testing.T) {
	srv := site(t, map[string]http.HandlerFunc{"/p": serve("text/html", "<p>The answer is 42.</p>")})
	var gotURL, gotPrompt, gotContent string
	w := WebFetch{Summarize: func(_ context.Context, u, prompt, content string) (string, error) {
		gotURL, gotPrompt, gotContent = u, prompt, content
		return "It says 42.", nil
	}}
	got, r := fetch(t, w, srv.URL+"/p")
	if r.IsError || got != "It says 42." {
		t.Fatalf("got %q", got)
	}
	if gotURL != srv.URL+"/p" || gotPrompt != "What does it say?" || strings.TrimSpace(gotContent) != "The answer is 42." {
		t.Errorf("Summarize(%q, %q, %q)", gotURL, gotPrompt, gotContent)
	}
	w.Summarize = func(context.Context, string, string, string) (string, error) { return "", errors.New("no model") }
	if got, r := fetch(t, w, srv.URL+"/p"); !r.IsError || !strings.Contains(got, "could not answer the prompt from it: no model") {
		t.Errorf("got %q (error %v)", got, r.IsError)
	}
}

func TestWebFetchSafety(t *testing.T) {
	in := json.RawMessage(`{"url":"https://example.com","prompt":"p"}`)
	w := WebFetch{}
	if !w.ReadOnly(in) || w.Destructive(in) || !w.ConcurrencySafe(in) {
		t.Error("WebFetch must be read-only, not destructive and concurrency-safe")
	}
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/a?b#c", "http://[::1]:8080/", "ftp://x", "https://u:p@h/", "//host/path", "HTTPS://EXAMPLE.COM"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := checkURL(s)
		if err != nil {
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("accepted %q as %#v", s, u)
		}
	})
}
