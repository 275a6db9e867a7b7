package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Hosts is the list of host names sandboxed commands may reach (the
// setting sandbox.network.allowedDomains). An entry is a name
// ("github.com", which allows that name alone) or a wildcard
// ("*.example.com", which allows every name below example.com but not
// example.com itself); case and a final dot do not matter. An IP address
// is allowed only when the list spells it out.
type Hosts []string

// Allows reports whether the requested host name (without a port) is in
// the list. It judges the name the client asked for, never an address
// it resolves to.
func (h Hosts) Allows(name string) bool {
	name, ok := hostName(name)
	if !ok {
		return false
	}
	for _, e := range h {
		e = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(e)), ".")
		if rest, ok := strings.CutPrefix(e, "*."); ok {
			if rest != "" && strings.HasSuffix(name, "."+rest) {
				return true
			}
			continue
		}
		if e != "" && name == e {
			return true
		}
	}
	return false
}

// checkAddr refuses a connection to an address of this machine or of a
// private network (loopback, link-local, private, unspecified,
// multicast) unless the list names it: the address itself, or
// "localhost" for a loopback address. The names are judged before they
// are resolved; this judges what they resolved to, so an allowed name (a
// wildcard's, most likely) that resolves to such an address — DNS
// rebinding — cannot reach the services outside the sandbox's network.
func (h Hosts) checkAddr(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("cairn's sandbox proxy: %q is not an address", address)
	}
	ip = ip.Unmap()
	if !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast()) {
		return nil
	}
	for _, e := range h {
		e = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(e)), ".")
		if e == "localhost" && ip.IsLoopback() {
			return nil
		}
		if a, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil && a.Unmap() == ip {
			return nil
		}
	}
	return fmt.Errorf("cairn's sandbox proxy refused %s: a local or private address; list it in sandbox.network.allowedDomains to reach it", ip)
}

// hostName is name as compared: lower case, without a final dot or the
// brackets of an IPv6 literal. ok is false for a name no resolver would
// take as one (empty, with spaces, slashes, a percent sign or control
// characters), so that nothing odd slips past the comparison.
func hostName(name string) (string, bool) {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if strings.HasPrefix(name, "[") && strings.HasSuffix(name, "]") {
		name = name[1 : len(name)-1]
	}
	if name == "" || len(name) > 253 {
		return "", false
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.', r == ':', r == '_':
		default:
			return "", false
		}
	}
	return name, true
}

// quiet is the proxy's log: nothing.
var quiet = log.New(io.Discard, "", 0)

// DenyHeader is the header the proxy sets on the answers by which it
// refuses a host; its value is the host.
const DenyHeader = "X-Cairn-Sandbox-Denied"

// proxy is the filtering HTTP proxy sandboxed commands reach the network
// through: it serves CONNECT (for HTTPS and any other TCP protocol) and
// plain HTTP requests in absolute form, and forwards only to the allowed
// hosts. It listens on a Unix socket that the sandbox sees; the bridge
// inside ([Bridge]) carries the commands' loopback connections to it.
type proxy struct {
	hosts Hosts
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	srv   *http.Server
	rp    *httputil.ReverseProxy

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
	denied  []string // the hosts refused, in order, the first maxDenied
	refused int      // how many requests were refused
}

// maxDenied is how many refused hosts the proxy remembers.
const maxDenied = 256

// startProxy listens on the Unix socket sock and serves until close.
// dial (nil: a net.Dialer) makes the connections to the allowed hosts.
func startProxy(sock string, hosts Hosts, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*proxy, error) {
	if dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(network, address string, _ syscall.RawConn) error {
				return hosts.checkAddr(address)
			}}
		dial = d.DialContext
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("cannot start the sandbox's network proxy on %s: %w", sock, err)
	}
	p := &proxy{hosts: hosts, dial: dial, tunnels: map[net.Conn]struct{}{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// The request goes to the host it names, which is the host
			// that was checked; a different Host header does not
			// travel with it.
			r.Out.Host = ""
		},
		Transport: &http.Transport{
			DialContext:           dial,
			Proxy:                 nil,
			MaxIdleConns:          16,
			IdleConnTimeout:       30 * time.Second,
			TLSHandshakeTimeout:   30 * time.Second,
			ResponseHeaderTimeout: 5 * time.Minute,
		},
		// Its complaints would land on cairn's terminal: the client
		// gets them as answers instead.
		ErrorLog: quiet,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, fmt.Sprintf("cairn's sandbox proxy could not reach %s: %v", r.URL.Host, err), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute, ErrorLog: quiet}
	go p.srv.Serve(l)
	return p, nil
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	authority := r.Host
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() || r.URL.Host == "" || r.URL.Scheme != "http" {
			http.Error(w, "cairn's sandbox proxy forwards CONNECT requests and plain http:// requests in absolute form; use https:// through CONNECT (HTTPS_PROXY is set for that)", http.StatusBadRequest)
			return
		}
		authority = r.URL.Host
	}
	name, port, err := net.SplitHostPort(authority)
	if err != nil {
		if r.Method == http.MethodConnect {
			http.Error(w, fmt.Sprintf("cairn's sandbox proxy: CONNECT needs host:port, not %q", authority), http.StatusBadRequest)
			return
		}
		name, port = authority, "80"
	}
	if !p.hosts.Allows(name) {
		p.deny(w, name)
		return
	}
	// The connection goes to the name that was checked, resolved here.
	if r.Method != http.MethodConnect {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.tunnel(w, r, net.JoinHostPort(name, port))
}

// deny answers 403 with a body that names the host and the setting.
func (p *proxy) deny(w http.ResponseWriter, name string) {
	p.mu.Lock()
	if len(p.denied) < maxDenied {
		p.denied = append(p.denied, name)
	}
	p.refused++
	p.mu.Unlock()
	w.Header().Set(DenyHeader, name)
	http.Error(w, fmt.Sprintf("cairn's sandbox refused the connection to %s: the host is not in the setting sandbox.network.allowedDomains (%s). Add %q (or a wildcard such as \"*.%s\") there to let sandboxed commands reach it, or run the command outside the sandbox with the person's approval.",
		name, strings.Join(p.hosts, ", "), name, parentDomain(name)), http.StatusForbidden)
}

// parentDomain is name without its first label ("a.b.c" → "b.c").
func parentDomain(name string) string {
	if _, rest, ok := strings.Cut(name, "."); ok && strings.Contains(rest, ".") {
		return rest
	}
	return name
}

// tunnel connects the client to target and copies both ways.
func (p *proxy) tunnel(w http.ResponseWriter, r *http.Request, target string) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := p.dial(ctx, "tcp", target)
	cancel()
	if err != nil {
		http.Error(w, fmt.Sprintf("cairn's sandbox proxy could not reach %s: %v", target, err), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "cairn's sandbox proxy cannot tunnel here", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(down, up) {
		down.Close()
		up.Close()
		return
	}
	defer p.untrack(down, up)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyThenClose(up, buf.Reader)
	}()
	copyThenClose(down, up)
	<-done
}

// copyThenClose copies src to dst, then half-closes dst for writing (or
// closes it), so that the other side sees the end.
func copyThenClose(dst net.Conn, src io.Reader) {
	_, _ = io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = dst.Close()
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.tunnels, c)
	}
}

// refusals is how many requests the proxy refused so far.
func (p *proxy) refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// deniedSince are the hosts, each once, of the refusals after the first n.
func (p *proxy) deniedSince(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, h := range p.denied[min(max(n, 0), len(p.denied)):] {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// close stops the proxy and every tunnel it carries.
func (p *proxy) close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	err := p.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
