package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
)

// BridgeCommand is the hidden first argument on which cairn's binary runs
// as the bridge inside the sandbox ([Bridge]) instead of as cairn.
const BridgeCommand = "__sandbox-bridge"

// proxyVars are the environment variables that send programs to a proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy", "FTP_PROXY", "ftp_proxy"}

// noProxy is where the proxy is not used: loopback inside the sandbox is
// the sandbox's own.
const noProxy = "localhost,127.0.0.1,::1"

// MaybeBridge runs the bridge and exits when the program was started as
// it (its first argument is [BridgeCommand]); otherwise it returns at
// once. A program that can run sandboxed commands with allowed hosts
// (cairn's main, and test binaries whose tests do) calls it first.
func MaybeBridge() {
	if len(os.Args) > 1 && os.Args[1] == BridgeCommand {
		os.Exit(Bridge(os.Args[2:]))
	}
}

// Bridge is the program that runs inside the sandbox, first, when hosts
// are allowed: args are the proxy's Unix socket, "--", and the command.
// It listens on a loopback port, carries every connection made to it to
// the socket (the filtering proxy on the host), and runs the command with
// the proxy variables pointing at the port; it ends when the command
// does, with its exit status. Files 3 to 9, when open, are passed on.
func Bridge(args []string) int {
	// The inherited files first, before anything here opens its own.
	var extra []*os.File
	for fd := 3; fd <= 9; fd++ {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil {
			for len(extra) < fd-3 {
				extra = append(extra, nil)
			}
			extra = append(extra, os.NewFile(uintptr(fd), fmt.Sprintf("fd%d", fd)))
		}
	}
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "cairn: "+BridgeCommand+" is run by cairn's sandbox: "+BridgeCommand+" SOCKET -- COMMAND [ARGS...]")
		return 2
	}
	sock, argv := args[0], args[2:]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "cairn's sandbox: cannot listen on the loopback for the network proxy (%v); the command ran without network\n", err)
		return 126
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go carry(c, sock)
		}
	}()
	url := "http://" + l.Addr().String()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = extra
	cmd.Env = proxyEnv(os.Environ(), url)
	// Signals reach the command from its process group; the bridge stays
	// until the command ends, so that its status is the bridge's.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ee.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
		return 127
	}
	return 0
}

// proxyEnv is env with the proxy variables pointing at url.
func proxyEnv(env []string, url string) []string {
	out := make([]string, 0, len(env)+len(proxyVars))
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		if !isProxyVar(name) {
			out = append(out, e)
		}
	}
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		out = append(out, v+"="+url)
	}
	return append(out, "NO_PROXY="+noProxy, "no_proxy="+noProxy)
}

func isProxyVar(name string) bool {
	for _, v := range proxyVars {
		if name == v {
			return true
		}
	}
	return false
}

// carry copies a loopback connection to the proxy's socket and back.
func carry(c net.Conn, sock string) {
	defer c.Close()
	up, err := net.Dial("unix", sock)
	if err != nil {
		// Say so the way a proxy would, so that the client shows it.
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ncairn's sandbox bridge cannot reach the network proxy: "+err.Error()+"\n")
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyThenClose(up, c)
	}()
	copyThenClose(c, up)
	<-done
}
