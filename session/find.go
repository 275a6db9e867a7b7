package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is returned when no session matches a reference.
var ErrNotFound = errors.New("no such session")

// Find resolves a session reference — a transcript path, a session id, or
// the first characters of one — to a transcript file. An id is looked up
// in the project of cwd first, then in every project, as Claude Code's
// --resume does; so is a prefix, which must then be the start of exactly
// one id there (else an *AmbiguousError lists the sessions it matches).
// A file that holds no transcript line at all is an error wrapping
// ErrNotTranscript.
func (h Home) Find(cwd, ref string) (string, error) {
	path, err := h.find(cwd, ref)
	if err != nil {
		return "", err
	}
	if err := looksLikeTranscript(path); err != nil {
		return "", err
	}
	return path, nil
}

func (h Home) find(cwd, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("empty session reference")
	}
	if strings.HasSuffix(ref, ".jsonl") || strings.ContainsRune(ref, filepath.Separator) {
		st, err := os.Stat(ref)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%q: %w (no such file)", ref, ErrNotFound)
			}
			return "", err
		}
		if st.IsDir() {
			return "", fmt.Errorf("%q is a folder; give a transcript file or a session id", ref)
		}
		if !strings.HasSuffix(ref, ".jsonl") {
			// A session is read and written through the store of its folder,
			// which keeps <sessionId>.jsonl files.
			return "", fmt.Errorf("%q is not a transcript file: a transcript's name is <sessionId>.jsonl; rename a copy so, or give the session id", ref)
		}
		return filepath.Abs(ref)
	}
	if ref == "." || ref == ".." || strings.ContainsAny(ref, `/\`) {
		return "", fmt.Errorf("%q is not a session id; give an id from `cairn sessions list`, or a transcript path", ref)
	}
	name := ref + ".jsonl"
	if cwd != "" {
		p := filepath.Join(h.ProjectDir(cwd), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	projects, _ := os.ReadDir(h.Projects())
	for _, d := range projects {
		p := filepath.Join(h.Projects(), d.Name(), name)
		if _, err := os.Stat(p); d.IsDir() && err == nil {
			return p, nil
		}
	}
	// A unique prefix of an id, in cwd's project first, then anywhere.
	var here, anywhere []string
	for _, d := range projects {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(h.Projects(), d.Name())
		files, _ := os.ReadDir(dir)
		for _, f := range files {
			if f.Type().IsRegular() && strings.HasPrefix(f.Name(), ref) && strings.HasSuffix(f.Name(), ".jsonl") {
				p := filepath.Join(dir, f.Name())
				anywhere = append(anywhere, p)
				if cwd != "" && dir == h.ProjectDir(cwd) {
					here = append(here, p)
				}
			}
		}
	}
	for _, found := range [][]string{here, anywhere} {
		switch {
		case len(found) == 1:
			return found[0], nil
		case len(found) > 1:
			return "", &AmbiguousError{Ref: ref, Paths: found}
		}
	}
	return "", fmt.Errorf("no session with id %q under %s (%w); `cairn sessions list --all` shows the sessions there are", ref, h.Projects(), ErrNotFound)
}

// AmbiguousError is Find's answer to an id prefix that several sessions
// share.
type AmbiguousError struct {
	Ref string
	// Paths are the matching transcripts.
	Paths []string
}

func (e *AmbiguousError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q is the start of %d session ids; give more of the id:", e.Ref, len(e.Paths))
	for _, p := range e.Paths {
		fmt.Fprintf(&b, "\n  %s  %s", strings.TrimSuffix(filepath.Base(p), ".jsonl"), filepath.Base(filepath.Dir(p)))
	}
	return b.String()
}
