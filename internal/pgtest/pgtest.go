// Package pgtest gives tests a real PostgreSQL server: the one named by
// CAIRN_TEST_POSTGRES (a postgres:// URL), as .ci/run starts it. Without
// one, tests skip with a message saying how to run them; on CI they fail
// instead, so a missing server never passes silently.
package pgtest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Env is the variable naming the test server.
const Env = "CAIRN_TEST_POSTGRES"

// URL returns the test server's URL, or skips (fails on CI) without one.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(Env)
	if url == "" {
		msg := Env + " is not set: these tests need a PostgreSQL server (for example: initdb -D /tmp/pg -A trust && pg_ctl -D /tmp/pg -o '-p 55432 -k /tmp' start; export " + Env + "=postgres://postgres@127.0.0.1:55432/postgres); .ci/run starts one"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return url
}

var seq atomic.Int64

// Project returns a project name no other test uses, so tests sharing one
// database never see each other's sessions.
func Project(t testing.TB) string {
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	return fmt.Sprintf("test-%s-%d-%d", name, time.Now().UnixNano(), seq.Add(1))
}
