package transcript_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairn-dev/cairn/transcript"
	"github.com/cairn-dev/cairn/transcript/transcripttest"
)

func TestFileStoreConformance(t *testing.T) {
	transcripttest.Run(t, func(t *testing.T) transcripttest.Harness {
		dir := filepath.Join(t.TempDir(), "project")
		s := transcript.NewFileStore(dir)
		return transcripttest.Harness{
			Store:  s,
			Reopen: func() transcript.Store { return transcript.NewFileStore(dir) },
			AppendRaw: func(id string, b []byte) {
				f, err := os.OpenFile(s.Path(id), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.Write(b); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

func TestMemStoreConformance(t *testing.T) {
	transcripttest.Run(t, func(t *testing.T) transcripttest.Harness {
		s := transcript.NewMemStore()
		return transcripttest.Harness{
			Store:     s,
			Reopen:    func() transcript.Store { return s },
			AppendRaw: s.AppendRaw,
		}
	})
}

func TestFileStoreModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "project")
	s := transcript.NewFileStore(dir)
	a, err := s.OpenAppender(t.Context(), "sess")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	st, err := os.Stat(s.Path("sess"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode %v, want 0600", st.Mode().Perm())
	}
	dst, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("project folder mode %v, want 0700", dst.Mode().Perm())
	}
}

func TestFileStoreSidecars(t *testing.T) {
	transcripttest.TestSidecars(t, func(t *testing.T) transcript.Store { return transcript.NewFileStore(t.TempDir()) })
}

func TestMemStoreSidecars(t *testing.T) {
	transcripttest.TestSidecars(t, func(t *testing.T) transcript.Store { return transcript.NewMemStore() })
}

// TestFileStoreSidecarLayout checks that sidecar files land where Claude
// Code keeps them, <project>/<sessionId>/<name>, readable by the owner
// only, and that a stray temporary file is not listed.
func TestFileStoreSidecarLayout(t *testing.T) {
	dir := t.TempDir()
	s := transcript.NewFileStore(dir)
	const id = "5b0d5a1e-0000-4000-8000-000000000001"
	if err := s.WriteSidecar(t.Context(), id, "tool-results/toolu_01.txt", []byte("out")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id, "tool-results", "toolu_01.txt")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the file is not at %s: %v", path, err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if got := transcript.SidecarDir(s, id); got != filepath.Join(dir, id) {
		t.Errorf("SidecarDir = %q", got)
	}
	if got := transcript.SidecarDir(transcript.NewMemStore(), id); got != "" {
		t.Errorf("the memory store has a sidecar folder %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, id, "tool-results", ".toolu_02.txt123"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	names, err := s.ListSidecars(t.Context(), id)
	if err != nil || len(names) != 1 || names[0] != "tool-results/toolu_01.txt" {
		t.Errorf("ListSidecars = %q, %v", names, err)
	}
}
