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
