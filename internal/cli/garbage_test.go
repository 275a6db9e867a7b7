package cli_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGarbageTranscript: a file that is not a transcript, given where one
// is expected, gets one message saying so and exit 1; the file is left
// as it was (resuming it must not append a session to it).
func TestGarbageTranscript(t *testing.T) {
	p := newProject(t)
	t.Setenv("HOME", p.home)
	dir := t.TempDir()
	passwd := filepath.Join(dir, "passwd")
	text := "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
	noise := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.UintN(256))
	}
	binary := filepath.Join(dir, "garbage.jsonl")
	for path, data := range map[string][]byte{passwd: []byte(text), binary: noise} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"sessions", "show", passwd},
		{"sessions", "export", passwd},
		{"context", passwd},
		{"sessions", "rewind", passwd, "--to", "x"},
		{"-r", binary, "-p", "hi"},
		{"sessions", "show", binary, "--json"},
	} {
		code, out, errOut := p.run(t, "", args...)
		if code != 1 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "is not a transcript") {
			t.Errorf("cairn %q: exit %d, stdout %q, stderr %q; want exit 1 and one line saying it is not a transcript", args, code, out, errOut)
		}
	}
	if b, _ := os.ReadFile(binary); !bytes.Equal(b, noise) {
		t.Error("the garbage file changed")
	}
	if len(p.srv.Requests()) != 0 {
		t.Error("a request was sent")
	}
}
