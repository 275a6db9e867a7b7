package sessionmemory

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// versions are the contents the writer process alternates between: large
// enough that a kill lands in the middle of writing one.
func versions() [2][]byte {
	return [2][]byte{
		bytes.Repeat([]byte("# Worklog\n- version A of the notes\n"), 60_000),
		bytes.Repeat([]byte("# Worklog\n- version B, longer, of the notes\n"), 50_000),
	}
}

// TestWriterProcess is the process TestCrashMidWriteLeavesNotesWhole
// kills: it rewrites the notes over and over, saying so after each write.
func TestWriterProcess(t *testing.T) {
	path := os.Getenv("CAIRN_TEST_NOTES_WRITER")
	if path == "" {
		t.Skip("run by TestCrashMidWriteLeavesNotesWhole")
	}
	v := versions()
	for i := 0; ; i++ {
		if err := writeAtomic(path, v[i%2]); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(i)
	}
}

// TestCrashMidWriteLeavesNotesWhole kills a process while it writes the
// notes, again and again: the file is always one whole version.
func TestCrashMidWriteLeavesNotesWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "session-memory", "summary.md")
	v := versions()
	for round, after := range []int{1, 2, 5, 8, 13} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriterProcess$")
		cmd.Env = append(os.Environ(), "CAIRN_TEST_NOTES_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		for n := 0; n < after && lines.Scan(); n++ {
		}
		cmd.Process.Kill() // mid-way through the next write
		cmd.Wait()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !bytes.Equal(got, v[0]) && !bytes.Equal(got, v[1]) {
			t.Fatalf("round %d: the notes are torn (%d bytes)", round, len(got))
		}
	}
}
