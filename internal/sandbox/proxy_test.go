package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostsAllows(t *testing.T) {
	h := Hosts{"github.com", "*.example.com", "Registry.NPMJS.org.", "127.0.0.1", " pypi.org "}
	for name, want := range map[string]bool{
		"github.com":          true,
		"GitHub.com.":         true,
		"api.github.com":      false,
		"example.com":         false,
		"a.example.com":       true,
		"a.b.example.com":     true,
		"badexample.com":      false,
		"example.com.evil.io": false,
		"registry.npmjs.org":  true,
		"127.0.0.1":           true,
		"127.0.0.2":           false,
		"[::1]":               false,
		"pypi.org":            true,
		"":                    false,
		"github.com/x":        false,
		"github.com%00":       false,
		"git hub.com":         false,
		"github.com\x00":      false,
	} {
		if got := h.Allows(name); got != want {
			t.Errorf("Allows(%q) = %v, want %v", name, got, want)
		}
	}
	if (Hosts{"*."}).Allows("x.") || (Hosts{""}).Allows("") {
		t.Error("an empty entry allows something")
	}
}

// proxyRig is the proxy on a Unix socket, with every name dialled to one
// fake server that records the Host header it was asked for.
type proxyRig struct {
	sock   string
	dialed chan string
	hosts  chan string
}

func newProxyRig(t *testing.T, hosts Hosts) *proxyRig {
	t.Helper()
	r := &proxyRig{sock: filepath.Join(t.TempDir(), "p.sock"), dialed: make(chan string, 16), hosts: make(chan string, 16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hosts <- req.Host
		fmt.Fprint(w, "hello from the fake host")
	}))
	t.Cleanup(srv.Close)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		r.dialed <- addr
		var d net.Dialer
		return d.DialContext(ctx, "tcp", srv.Listener.Addr().String())
	}
	p, err := startProxy(r.sock, hosts, dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close() })
	return r
}

// raw sends a request as written to the proxy and returns the answer.
func (r *proxyRig) raw(t *testing.T, request string) (*http.Response, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", r.sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(request, "CONNECT") {
		return resp, "", &bufConn{c, br}
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b), c
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func TestProxy(t *testing.T) {
	r := newProxyRig(t, Hosts{"allowed.test", "*.wild.test"})

	// Plain HTTP to an allowed name reaches it, as that name.
	resp, body, _ := r.raw(t, "GET http://allowed.test:8080/x HTTP/1.1\r\nHost: allowed.test:8080\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 200 || body != "hello from the fake host" || <-r.dialed != "allowed.test:8080" {
		t.Errorf("allowed plain HTTP: %d %q", resp.StatusCode, body)
	}
	<-r.hosts

	// A Host header naming another host does not travel: the request
	// goes to the checked name, with that name.
	resp, _, _ = r.raw(t, "GET http://allowed.test/ HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n")
	if got, host := <-r.dialed, <-r.hosts; resp.StatusCode != 200 || got != "allowed.test:80" || host != "allowed.test" {
		t.Errorf("Host smuggling: status %d, dialled %s, Host %s", resp.StatusCode, got, host)
	}

	// CONNECT to a wildcard name tunnels.
	_, _, c := r.raw(t, "CONNECT api.wild.test:443 HTTP/1.1\r\nHost: api.wild.test:443\r\n\r\n")
	if got := <-r.dialed; got != "api.wild.test:443" {
		t.Errorf("CONNECT dialled %s", got)
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: api.wild.test\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
		t.Errorf("through the tunnel: %v, %v", resp, err)
	}
	<-r.hosts

	// Refused: other names, the allowed name's address, the wildcard's
	// own domain, plain requests not in absolute form.
	for _, req := range []string{
		"CONNECT evil.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n",
		"GET http://evil.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n",
		"CONNECT wild.test:443 HTTP/1.1\r\nHost: wild.test:443\r\n\r\n",
		"CONNECT allowed.test.evil.test:443 HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		resp, body, _ := r.raw(t, req)
		name, _, _ := strings.Cut(strings.Fields(req)[1], ":")
		if strings.HasPrefix(name, "http") {
			name = "evil.test"
		}
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get(DenyHeader) != name ||
			!strings.Contains(body, name) || !strings.Contains(body, "sandbox.network.allowedDomains") {
			t.Errorf("%q: %d %q %q; want 403 naming %s and the setting", req, resp.StatusCode, resp.Header.Get(DenyHeader), body, name)
		}
	}
	if resp, _, _ := r.raw(t, "GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a request not in absolute form: %d", resp.StatusCode)
	}
	select {
	case a := <-r.dialed:
		t.Errorf("a refused request was dialled: %s", a)
	default:
	}
}

// TestCheckAddr: what an allowed name resolves to is judged too — an
// address of this machine or of a private network is refused unless the
// list names it (DNS rebinding cannot reach the host's services).
func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		hosts Hosts
		addr  string
		ok    bool
	}{
		{Hosts{"*.example.com"}, "93.184.215.14:443", true},
		{Hosts{"*.example.com"}, "127.0.0.1:8080", false},
		{Hosts{"*.example.com"}, "[::1]:8080", false},
		{Hosts{"*.example.com"}, "10.1.2.3:80", false},
		{Hosts{"*.example.com"}, "192.168.0.10:80", false},
		{Hosts{"*.example.com"}, "169.254.169.254:80", false}, // cloud metadata
		{Hosts{"*.example.com"}, "0.0.0.0:80", false},
		{Hosts{"*.example.com"}, "[::ffff:127.0.0.1]:80", false},
		{Hosts{"localhost"}, "127.0.0.1:8080", true},
		{Hosts{"localhost"}, "[::1]:8080", true},
		{Hosts{"localhost"}, "10.0.0.1:80", false},
		{Hosts{"10.0.0.1"}, "10.0.0.1:80", true},
		{Hosts{"[::1]"}, "[::1]:80", true},
	} {
		err := tc.hosts.checkAddr(tc.addr)
		if (err == nil) != tc.ok {
			t.Errorf("%q.checkAddr(%s) = %v, want allowed %v", tc.hosts, tc.addr, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "sandbox.network.allowedDomains") {
			t.Errorf("the refusal does not say what to change: %v", err)
		}
	}
}
