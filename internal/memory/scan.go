package memory

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairn-dev/cairn/internal/frontmatter"
)

// Header is the start of one memory file, what recall chooses from.
type Header struct {
	File string // the name inside the folder
	Path string
	Mod  time.Time
	// Head is the file's first HeaderLines lines.
	Head string
	// Name, Description and Type are the front matter's, when it parses.
	Name, Description string
	Type              Type
}

// Scan returns the headers of the newest memory files of dir, at most
// limit, newest first. It reads at most limit files and only their first
// lines, so a folder of thousands of files costs a directory listing and
// limit small reads. A file whose front matter is missing or malformed is
// reported in warnings and skipped. Cancelling ctx stops the scan.
func Scan(ctx context.Context, dir string, limit int) ([]Header, []string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	type cand struct {
		name string
		mod  time.Time
	}
	var cands []cand
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || name == IndexName || !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		cands = append(cands, cand{name, info.ModTime()})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var out []Header
	var warnings []string
	for _, c := range cands {
		if len(out) >= limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return out, warnings, err
		}
		path := filepath.Join(dir, c.name)
		head, err := readHead(path, HeaderLines)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: %v; skipped", path, err))
			continue
		}
		h := Header{File: c.name, Path: path, Mod: c.mod, Head: head}
		var m Memory
		_, ok, ferr := splitHead(head)
		if ferr == nil && ok {
			_, ferr = frontmatter.Parse([]byte(head), &m)
		}
		if ferr == nil && ok {
			ferr = m.Validate()
		}
		if ferr != nil || !ok {
			why := "no front matter"
			if ferr != nil {
				why = ferr.Error()
			}
			warnings = append(warnings, fmt.Sprintf("%s: %s: %s; skipped", path, ErrMalformed, why))
			continue
		}
		h.Name, h.Description, h.Type = m.Name, m.Description, m.Type
		out = append(out, h)
	}
	return out, warnings, nil
}

// splitHead reports whether a file's head opens and closes front matter.
func splitHead(head string) (string, bool, error) {
	front, _, ok, err := frontmatter.Split([]byte(head))
	return string(front), ok, err
}

// readHead returns the first n lines of a file, reading at most 16 KB.
func readHead(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(io.LimitReader(f, 16<<10))
	sc.Buffer(make([]byte, 0, 4096), 16<<10)
	for i := 0; i < n && sc.Scan(); i++ {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil && err != bufio.ErrTooLong {
		return "", err
	}
	return b.String(), nil
}

// readCapped reads at most n bytes of a file; cut reports that there was
// more.
func readCapped(path string, n int) (text string, cut bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(n)+1))
	if err != nil {
		return "", false, err
	}
	if len(data) > n {
		return string(data[:n]), true, nil
	}
	return string(data), false, nil
}
