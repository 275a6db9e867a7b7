// Package proctest helps tests check that processes a command started
// are gone: hooks, Bash calls and MCP servers must not outlive their
// timeout or cancellation; and read what the test's own process maps
// (Mapping).
package proctest

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// PidIn returns the process id a command printed on the first line of
// out.
func PidIn(t testing.TB, out string) int {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("no pid in output %q", out)
	}
	return pid
}

// WaitGone fails the test unless process pid ends within 5 s, waiting on
// its exit event (a pidfd) rather than sleeping; a zombie its new parent
// has not reaped yet counts as ended. after says what it should not have
// outlived, for the failure message. Without pidfd_open the test is
// skipped.
func WaitGone(t testing.TB, pid int, after string) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 5000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs 5 s after %s", pid, after)
		}
		return
	}
}

// Command returns the path of the program name, which a test needs. When
// it is missing the test is skipped with why (what to install), except
// under CI (the environment variable CI set), where .ci/run installs it
// and a missing one is a failure, never a silent skip.
func Command(t testing.TB, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := name + " is not installed: " + why
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " (.ci/run installs it)")
		}
		t.Skip(msg)
	}
	return p
}
