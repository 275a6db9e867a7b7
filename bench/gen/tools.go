package gen

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// makeCall invents a tool call of the session together with its result.
func (g *generator) makeCall() call {
	var c call
	switch r := g.rng.Float64(); {
	case r < 0.38:
		c = g.read()
	case r < 0.70:
		c = g.bash()
	case r < 0.85:
		c = g.edit()
	default:
		c = g.grep()
	}
	c.id = g.token("toolu_01", 22)
	return c
}

// touch records that the session read or edited f.
func (g *generator) touch(f *file) {
	g.recent = append(g.recent, f)
	if len(g.recent) > 16 {
		g.recent = slices.Delete(g.recent, 0, len(g.recent)-16)
	}
}

// read reads a whole file, or a slice of a long one.
func (g *generator) read() call {
	if g.chance(0.004) {
		return g.readImage()
	}
	f := g.files[g.rng.IntN(len(g.files))]
	if len(g.recent) > 0 && g.chance(0.3) {
		f = g.recent[g.rng.IntN(len(g.recent))]
	}
	g.touch(f)
	var in enc
	in.Open()
	in.Str("file_path", f.path)
	start, lines, content := 1, len(f.lines)+1, f.text()
	if len(f.lines) > 200 && g.chance(0.3) {
		start = 1 + g.rng.IntN(len(f.lines)-100)
		n := min(50+g.rng.IntN(150), len(f.lines)-start+1)
		if g.opts.Terse {
			n = min(n, 3+n%12)
		}
		in.Int("offset", int64(start))
		in.Int("limit", int64(n))
		lines, content = n, strings.Join(f.lines[start-1:start-1+n], "\n")
	} else if g.opts.Terse && len(f.lines) > 3 {
		start = 1 + len(content)%len(f.lines)
		n := min(3+len(content)%12, len(f.lines)-start+1)
		in.Int("offset", int64(start))
		in.Int("limit", int64(n))
		lines, content = n, strings.Join(f.lines[start-1:start-1+n], "\n")
	}
	in.End()
	var d enc
	d.Open()
	d.Str("type", "text")
	d.Obj("file")
	d.Str("filePath", f.path)
	d.Str("content", content)
	d.Int("numLines", int64(lines))
	d.Int("startLine", int64(start))
	d.Int("totalLines", int64(len(f.lines)+1))
	d.End()
	d.End()
	return call{name: "Read", input: in.b, content: numberLines(content, start), detail: d.b}
}

// readImage reads a screenshot: the result is an image block, base64 data
// that is sent to the model as it is.
func (g *generator) readImage() call {
	var in enc
	in.Open()
	in.Str("file_path", CWD+"/docs/screenshots/"+g.pick(slugWords)+".png")
	in.End()
	raw := make([]byte, 20<<10+g.rng.IntN(80<<10))
	for i := range raw {
		raw[i] = byte(g.rng.Uint32())
	}
	data := base64.StdEncoding.EncodeToString(raw)
	var b enc
	b.b = append(b.b, '[')
	b.Open()
	b.Str("type", "image")
	b.Obj("source")
	b.Str("type", "base64")
	b.Str("data", data)
	b.Str("media_type", "image/png")
	b.End()
	b.End()
	b.EndArr()
	var d enc
	d.Open()
	d.Str("type", "image")
	d.Obj("file")
	d.Str("base64", data)
	d.Str("type", "image/png")
	d.Int("originalSize", int64(len(raw)))
	d.End()
	d.End()
	return call{name: "Read", input: in.b, blocks: b.b, detail: d.b}
}

// numberLines renders content as the Read tool returns it.
func numberLines(content string, start int) string {
	var b strings.Builder
	b.Grow(len(content) + len(content)/8)
	for i, line := range strings.Split(content, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(start + i))
		b.WriteByte('\t')
		b.WriteString(line)
	}
	return b.String()
}

// bash runs a command; a failing one is answered as an error.
func (g *generator) bash() call {
	cmd, desc, stdout, stderr, code := g.command()
	if g.opts.Terse {
		stdout, stderr = firstLines(stdout, 3), firstLines(stderr, 3)
	}
	var in enc
	in.Open()
	in.Str("command", cmd)
	in.Str("description", desc)
	if g.chance(0.1) {
		in.Int("timeout", 120000)
	}
	in.End()
	if code != 0 {
		msg := "Exit code " + strconv.Itoa(code) + "\n" + strings.TrimSuffix(stderr+stdout, "\n")
		t := true
		return call{name: "Bash", input: in.b, content: msg, isError: &t, detail: jsonString("Error: " + msg)}
	}
	var d enc
	d.Open()
	d.Str("stdout", stdout)
	d.Str("stderr", stderr)
	d.Bool("interrupted", false)
	d.Bool("isImage", false)
	d.Bool("noOutputExpected", false)
	d.End()
	content := stdout
	if stderr != "" {
		content = strings.TrimSuffix(stdout+"\n"+stderr, "\n")
	}
	if content == "" {
		content = "(Bash completed with no output)"
	}
	f := false
	return call{name: "Bash", input: in.b, content: content, isError: &f, detail: d.b}
}

// command invents a shell command and what it printed.
func (g *generator) command() (cmd, desc, stdout, stderr string, code int) {
	var b strings.Builder
	switch g.rng.IntN(8) {
	case 0, 1:
		pkg := g.pick(packages)
		cmd, desc = "go test ./"+pkg+"/...", "Run the "+pkg+" tests"
		fail := g.chance(0.3)
		for _, p := range packages {
			if fail && p == pkg {
				continue
			}
			if p == pkg || g.chance(0.3) {
				fmt.Fprintf(&b, "ok  \tgithub.com/acme/acme-api/%s\t%d.%03ds\n", p, g.rng.IntN(3), g.rng.IntN(1000))
			}
		}
		if fail {
			test := "Test" + title(g.pick(verbs)) + title(g.pick(nouns))
			fmt.Fprintf(&b, "--- FAIL: %s (0.%02ds)\n", test, g.rng.IntN(100))
			for range 1 + g.rng.IntN(4) {
				fmt.Fprintf(&b, "    %s_test.go:%d: %s(%q) = %q, want %q\n", g.pick(nouns), 10+g.rng.IntN(400), g.pick(verbs), g.pick(nouns), g.pick(nouns), g.pick(nouns))
			}
			fmt.Fprintf(&b, "FAIL\nFAIL\tgithub.com/acme/acme-api/%s\t0.%03ds\nFAIL\n", pkg, g.rng.IntN(1000))
			code = 1
		}
	case 2:
		pkg := g.pick(packages)
		cmd, desc = "go test -v -count=1 ./"+pkg+"/", "Run the "+pkg+" tests verbosely"
		for range 10 + g.rng.IntN(120) {
			test := "Test" + title(g.pick(verbs)) + title(g.pick(nouns))
			fmt.Fprintf(&b, "=== RUN   %s\n", test)
			for range g.rng.IntN(4) {
				sub := test + "/" + g.pick(nouns) + "_" + g.pick(verbs)
				fmt.Fprintf(&b, "=== RUN   %s\n--- PASS: %s (0.00s)\n", sub, sub)
			}
			fmt.Fprintf(&b, "--- PASS: %s (0.%02ds)\n", test, g.rng.IntN(100))
		}
		fmt.Fprintf(&b, "PASS\nok  \tgithub.com/acme/acme-api/%s\t%d.%03ds\n", pkg, g.rng.IntN(4), g.rng.IntN(1000))
	case 3:
		cmd, desc = "git diff", "Show the changes so far"
		for _, ed := range g.edits {
			fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex %s..%s 100644\n--- a/%s\n+++ b/%s\n", ed.rel, ed.rel, g.hex(7), g.hex(7), ed.rel, ed.rel)
			fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", ed.start, ed.n, ed.start, ed.n)
			for _, l := range ed.patch {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
	case 4:
		dir := g.pick(packages)
		cmd, desc = "ls -la "+dir, "List the "+dir+" folder"
		fmt.Fprintf(&b, "total %d\ndrwxr-xr-x  2 user user 4096 Jan 12 09:14 .\ndrwxr-xr-x 11 user user 4096 Jan 12 09:02 ..\n", 8*len(g.files))
		for _, f := range g.files {
			if strings.HasPrefix(f.rel, dir+"/") {
				fmt.Fprintf(&b, "-rw-r--r--  1 user user %5d Jan %2d %02d:%02d %s\n", len(f.text()), 1+g.rng.IntN(12), g.rng.IntN(24), g.rng.IntN(60), strings.TrimPrefix(f.rel, dir+"/"))
			}
		}
	case 5:
		cmd, desc = "git log --oneline -25", "Show recent commits"
		for range 25 {
			fmt.Fprintf(&b, "%s %s: %s %s\n", g.hex(7), g.pick(packages), g.pick(verbs), g.words(3+g.rng.IntN(6)))
		}
	case 6:
		cmd, desc = "go vet ./... && go build ./...", "Vet and build"
		if g.chance(0.25) {
			f := g.files[g.rng.IntN(len(g.files))]
			fmt.Fprintf(&b, "# github.com/acme/acme-api/%s\n./%s:%d:%d: undefined: %s\n", f.pkg, f.rel, 1+g.rng.IntN(len(f.lines)), 2+g.rng.IntN(30), title(g.pick(nouns)))
			return cmd, desc, "", b.String(), 1
		}
	default:
		word := g.pick(nouns)
		cmd, desc = "grep -rn \""+word+"\" --include='*.go' . | head -40", "Find uses of "+word
		n := 0
		for _, f := range g.files {
			for i, l := range f.lines {
				if n < 40 && strings.Contains(l, word) {
					fmt.Fprintf(&b, "./%s:%d:%s\n", f.rel, i+1, l)
					n++
				}
			}
		}
	}
	return cmd, desc, strings.TrimSuffix(b.String(), "\n"), "", code
}

// hex returns n random hex digits, as in a commit hash.
func (g *generator) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

// edit is one change made by the Edit tool.
type edit struct {
	rel      string
	start, n int // the hunk, 1-based
	patch    []string
}

// edit replaces one to three lines of a file, which changes the project
// for later reads and diffs.
func (g *generator) edit() call {
	f := g.files[g.rng.IntN(len(g.files))]
	if len(g.recent) > 0 && g.chance(0.7) {
		f = g.recent[g.rng.IntN(len(g.recent))]
	}
	g.touch(f)
	original := f.text()
	i, n := g.editable(f)
	old := f.lines[i : i+n]
	repl := make([]string, n)
	for j, l := range old {
		repl[j] = g.mutate(l)
	}
	oldS, newS := strings.Join(old, "\n"), strings.Join(repl, "\n")
	var in enc
	in.Open()
	in.Bool("replace_all", false)
	in.Str("file_path", f.path)
	in.Str("old_string", oldS)
	in.Str("new_string", newS)
	in.End()
	if g.chance(0.04) {
		msg := "<tool_use_error>String to replace not found in file.\nString: " + oldS + "</tool_use_error>"
		t := true
		return call{name: "Edit", input: in.b, content: msg, isError: &t, detail: jsonString("Error: String to replace not found in file.\nString: " + oldS)}
	}
	lo, hi := max(0, i-3), min(len(f.lines), i+n+3)
	var patch []string
	for j := lo; j < hi; j++ {
		if j == i {
			for _, l := range old {
				patch = append(patch, "-"+l)
			}
			for _, l := range repl {
				patch = append(patch, "+"+l)
			}
			j += n - 1
			continue
		}
		patch = append(patch, " "+f.lines[j])
	}
	copy(f.lines[i:], repl)
	f.cached = ""
	g.edits = append(g.edits, edit{rel: f.rel, start: lo + 1, n: hi - lo, patch: patch})
	if len(g.edits) > 6 {
		g.edits = slices.Delete(g.edits, 0, 1)
	}
	var d enc
	d.Open()
	d.Str("filePath", f.path)
	d.Str("oldString", oldS)
	d.Str("newString", newS)
	d.Str("originalFile", original)
	d.Arr("structuredPatch")
	d.Open()
	d.Int("oldStart", int64(lo+1))
	d.Int("oldLines", int64(hi-lo))
	d.Int("newStart", int64(lo+1))
	d.Int("newLines", int64(hi-lo))
	d.Arr("lines")
	for _, l := range patch {
		d.Elem(l)
	}
	d.EndArr()
	d.End()
	d.EndArr()
	d.Bool("userModified", false)
	d.Bool("replaceAll", false)
	d.End()
	content := "The file " + f.path + " has been updated successfully. (file state is current in your context — no need to Read it back)"
	return call{name: "Edit", input: in.b, content: content, detail: d.b}
}

// editable picks 1–3 lines of f to change, preferring lines with code.
func (g *generator) editable(f *file) (int, int) {
	n := 1 + g.rng.IntN(3)
	n = min(n, len(f.lines))
	for range 8 {
		i := g.rng.IntN(len(f.lines) - n + 1)
		if strings.TrimSpace(f.lines[i]) != "" && strings.TrimSpace(f.lines[i]) != "}" {
			return i, n
		}
	}
	return g.rng.IntN(len(f.lines) - n + 1), n
}

// mutate changes one word of a line, or marks it when it has none to change.
func (g *generator) mutate(l string) string {
	for range 4 {
		w := g.pick(nouns)
		if strings.Contains(l, w) {
			return strings.Replace(l, w, g.pick(nouns), 1)
		}
	}
	if strings.TrimSpace(l) == "" {
		return l
	}
	return l + " // " + g.pick(verbs) + " " + g.pick(nouns)
}

// grep searches the project for a word, listing files or matching lines.
func (g *generator) grep() call {
	word := g.pick(nouns)
	if g.chance(0.5) {
		word = title(g.pick(verbs)) + title(g.pick(nouns))
	}
	files := g.chance(0.5)
	var in enc
	in.Open()
	in.Str("pattern", word)
	in.Str("path", CWD)
	var d enc
	d.Open()
	var content string
	if files {
		in.Str("output_mode", "files_with_matches")
		var names []string
		for _, f := range g.files {
			if strings.Contains(f.text(), word) {
				names = append(names, f.path)
			}
		}
		if g.opts.Terse {
			names = names[:min(len(names), 3)]
		}
		d.Str("mode", "files_with_matches")
		d.Arr("filenames")
		for _, n := range names {
			d.Elem(n)
		}
		d.EndArr()
		d.Int("numFiles", int64(len(names)))
		content = "No files found"
		if len(names) > 0 {
			content = fmt.Sprintf("Found %d files\n%s", len(names), strings.Join(names, "\n"))
		}
	} else {
		in.Str("output_mode", "content")
		in.Bool("-n", true)
		var b strings.Builder
		n, limit := 0, 60
		if g.opts.Terse {
			limit = 3
		}
		for _, f := range g.files {
			for i, l := range f.lines {
				if n < limit && strings.Contains(l, word) {
					fmt.Fprintf(&b, "%s:%d:%s\n", f.path, i+1, l)
					n++
				}
			}
		}
		content = strings.TrimSuffix(b.String(), "\n")
		d.Str("mode", "content")
		d.Int("numFiles", 0)
		d.Arr("filenames")
		d.EndArr()
		d.Str("content", content)
		d.Int("numLines", int64(n))
		if n == 0 {
			content = "No matches found"
		}
	}
	in.End()
	d.End()
	return call{name: "Grep", input: in.b, content: content, detail: d.b}
}

// firstLines returns s cut after its first n lines (with their newlines).
func firstLines(s string, n int) string {
	at := 0
	for range n {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			return s
		}
		at += i + 1
	}
	return s[:at]
}
