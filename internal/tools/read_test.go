package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

func TestReadText(t *testing.T) {
	long := strings.Repeat("é", ReadMaxLineLength+10)
	tests := []struct {
		name    string
		content string
		input   map[string]any
		want    string
		file    readFile // FilePath is filled in
		partial bool
	}{
		{
			name:    "trailing newline gives an empty last line",
			content: "a\nb\n",
			want:    "1\ta\n2\tb\n3\t",
			file:    readFile{Content: "a\nb\n", NumLines: 3, StartLine: 1, TotalLines: 3},
		},
		{
			name:    "no trailing newline",
			content: "a\nb",
			want:    "1\ta\n2\tb",
			file:    readFile{Content: "a\nb", NumLines: 2, StartLine: 1, TotalLines: 2},
		},
		{
			name:    "offset and limit",
			content: "1\n2\n3\n4\n5\n",
			input:   map[string]any{"offset": 2, "limit": 2},
			want:    "2\t2\n3\t3",
			file:    readFile{Content: "2\n3", NumLines: 2, StartLine: 2, TotalLines: 6},
			partial: true,
		},
		{
			name:    "numbers given as strings",
			content: "1\n2\n3\n4\n5\n",
			input:   map[string]any{"offset": "4", "limit": "1"},
			want:    "4\t4",
			file:    readFile{Content: "4", NumLines: 1, StartLine: 4, TotalLines: 6},
			partial: true,
		},
		{
			name:    "offset 0 is the start",
			content: "x\n",
			input:   map[string]any{"offset": 0},
			want:    "1\tx\n2\t",
			file:    readFile{Content: "x\n", NumLines: 2, StartLine: 1, TotalLines: 2},
		},
		{
			name:    "CRLF",
			content: "a\r\nb\r\n",
			want:    "1\ta\n2\tb\n3\t",
			file:    readFile{Content: "a\nb\n", NumLines: 3, StartLine: 1, TotalLines: 3},
		},
		{
			name:    "long line cut",
			content: long + "\nshort",
			want:    "1\t" + long[:2*ReadMaxLineLength] + lineCut + "\n2\tshort",
			file:    readFile{Content: long[:2*ReadMaxLineLength] + lineCut + "\nshort", NumLines: 2, StartLine: 1, TotalLines: 2},
		},
		{
			name:    "offset past the end",
			content: "a\nb",
			input:   map[string]any{"offset": 9},
			want:    "<system-reminder>Warning: the file exists but is shorter than the provided offset (9). The file has 2 lines.</system-reminder>",
			file:    readFile{Content: "", NumLines: 0, StartLine: 9, TotalLines: 2},
		},
		{
			name:    "empty file",
			content: "",
			want:    "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
			file:    readFile{Content: "", NumLines: 0, StartLine: 1, TotalLines: 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t)
			path := filepath.Join(env.ProjectDir, "f.txt")
			writeTestFile(t, path, tt.content)
			input := map[string]any{"file_path": path}
			for k, v := range tt.input {
				input[k] = v
			}
			r := call(t, Read{}, env, input)
			if r.IsError {
				t.Fatalf("error: %s", text(t, r))
			}
			if diff := cmp.Diff(tt.want, text(t, r)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			tt.file.FilePath = path
			if diff := cmp.Diff(readDetail{Type: "text", File: tt.file}, r.Detail); diff != "" {
				t.Errorf("detail (-want +got):\n%s", diff)
			}
			if tt.file.NumLines == 0 && tt.content != "" {
				return // nothing was shown
			}
			seen, ok := env.Files.Seen(path)
			if !ok || seen.Partial != tt.partial {
				t.Errorf("Files.Seen = %+v, %v; want recorded with Partial %v", seen, ok, tt.partial)
			}
		})
	}
}

func TestReadDefaultLimit(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "big.txt")
	var b strings.Builder
	for range ReadDefaultLimit + 500 {
		b.WriteString("x\n")
	}
	writeTestFile(t, path, b.String())
	r := call(t, Read{}, env, map[string]any{"file_path": path})
	d := r.Detail.(readDetail)
	if d.File.NumLines != ReadDefaultLimit || d.File.TotalLines != ReadDefaultLimit+501 {
		t.Errorf("numLines %d totalLines %d, want %d and %d", d.File.NumLines, d.File.TotalLines, ReadDefaultLimit, ReadDefaultLimit+501)
	}
	if seen, _ := env.Files.Seen(path); !seen.Partial {
		t.Error("a read cut by the default limit is not recorded as partial")
	}
	// A later partial read of the same version keeps the full read.
	call(t, Read{}, env, map[string]any{"file_path": path, "offset": 1, "limit": ReadDefaultLimit + 501})
	call(t, Read{}, env, map[string]any{"file_path": path, "offset": 10, "limit": 1})
	if seen, _ := env.Files.Seen(path); seen.Partial {
		t.Error("a partial read after a full one of the same version marked the file partial")
	}
}

func TestReadErrors(t *testing.T) {
	env := newEnv(t)
	bin := filepath.Join(env.ProjectDir, "prog.bin")
	writeTestFile(t, bin, "ELF\x00\x01\x02garbage")
	latin := filepath.Join(env.ProjectDir, "latin.bin")
	writeTestFile(t, latin, strings.Repeat("\xe9\xff\xfe", 100))
	tests := []struct {
		name  string
		input any
		want  string // in the error text
	}{
		{"relative path", map[string]any{"file_path": "notes.txt"}, "must be an absolute path"},
		{"missing", map[string]any{"file_path": filepath.Join(env.ProjectDir, "nope")}, "File does not exist"},
		{"directory", map[string]any{"file_path": env.ProjectDir}, "is a directory"},
		{"NUL bytes", map[string]any{"file_path": bin}, "binary file (a NUL byte at offset 3)"},
		{"not UTF-8", map[string]any{"file_path": latin}, "binary file"},
		{"no file_path", map[string]any{}, `the required parameter "file_path" is missing`},
		{"wrong type", map[string]any{"file_path": 3}, `parameter "file_path" must be a string, got 3`},
		{"bad limit", map[string]any{"file_path": bin, "limit": 0}, `"limit" must be 1 or more`},
		{"fractional offset", map[string]any{"file_path": bin, "offset": 1.5}, `"offset" must be an integer`},
		{"unknown parameter", map[string]any{"file_path": bin, "path": "x"}, `unknown parameter "path"`},
		{"not an object", "[1]", "must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, Read{}, env, tt.input)
			got := text(t, r)
			if !r.IsError || !strings.Contains(got, tt.want) || !strings.HasPrefix(got, "<tool_use_error>") {
				t.Errorf("got %q (error %v), want a tool_use_error containing %q", got, r.IsError, tt.want)
			}
		})
	}
}

func TestReadTooMuch(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "wide.txt")
	line := strings.Repeat("y", 1000) + "\n"
	writeTestFile(t, path, strings.Repeat(line, 1000))
	r := call(t, Read{}, env, map[string]any{"file_path": path})
	if !r.IsError || !strings.Contains(text(t, r), "offset and limit") {
		t.Errorf("got %q, want an error asking for offset and limit", text(t, r))
	}
	r = call(t, Read{}, env, map[string]any{"file_path": path, "limit": 100})
	if r.IsError {
		t.Errorf("a small part was refused: %q", text(t, r))
	}
}

func TestReadImage(t *testing.T) {
	env := newEnv(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(env.ProjectDir, "dot.png")
	writeTestFile(t, path, buf.String())
	// An image named .jpg is sent with the type its bytes have.
	misnamed := filepath.Join(env.ProjectDir, "dot.jpg")
	writeTestFile(t, misnamed, buf.String())

	for _, p := range []string{path, misnamed} {
		r := call(t, Read{}, env, map[string]any{"file_path": p})
		if r.IsError || len(r.Content) != 1 || r.Content[0].Type != model.BlockImage {
			t.Fatalf("%s: got %+v, want one image block", p, r)
		}
		var src struct {
			Type      string
			MediaType string `json:"media_type"`
			Data      string
		}
		if err := json.Unmarshal(r.Content[0].Extra["source"], &src); err != nil {
			t.Fatal(err)
		}
		data := base64.StdEncoding.EncodeToString(buf.Bytes())
		if src.Type != "base64" || src.MediaType != "image/png" || src.Data != data {
			t.Errorf("source = %+v, want base64 image/png of the file", src)
		}
		want := map[string]any{"type": "image", "file": map[string]any{
			"base64": data, "type": "image/png", "originalSize": float64(buf.Len()),
			"dimensions": map[string]any{"originalWidth": 3.0, "originalHeight": 2.0, "displayWidth": 3.0, "displayHeight": 2.0},
		}}
		if diff := cmp.Diff(want, detail(t, r)); diff != "" {
			t.Errorf("detail (-want +got):\n%s", diff)
		}
		if _, ok := env.Files.Seen(p); !ok {
			t.Error("image read not recorded")
		}
	}

	// A .png that is not an image is a binary file like any other.
	fake := filepath.Join(env.ProjectDir, "fake.png")
	writeTestFile(t, fake, "\x00\x01not an image")
	if r := call(t, Read{}, env, map[string]any{"file_path": fake}); !r.IsError || !strings.Contains(text(t, r), "binary") {
		t.Errorf("fake image: got %+v", r)
	}
}

func TestReadCancelled(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.ProjectDir, "f.txt")
	writeTestFile(t, path, "a\n")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (Read{}).Run(ctx, env, rawInput(t, map[string]any{"file_path": path})); err == nil {
		t.Error("Run with a cancelled context returned no error")
	}
}

func TestReadSafety(t *testing.T) {
	var tl tool.Tool = Read{}
	in := json.RawMessage(`{"file_path":"/x"}`)
	if !tl.ReadOnly(in) || tl.Destructive(in) || !tl.ConcurrencySafe(in) {
		t.Error("Read must be read-only, not destructive, concurrency-safe")
	}
}

func TestImageType(t *testing.T) {
	tests := []struct {
		data, want string
	}{
		{"\x89PNG\r\n\x1a\nrest", "image/png"},
		{"\xff\xd8\xff\xe0", "image/jpeg"},
		{"GIF89a...", "image/gif"},
		{"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"BM bitmap", ""},
		{"RIFF\x00\x00\x00\x00WAVE", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := imageType([]byte(tt.data)); got != tt.want {
			t.Errorf("imageType(%q) = %q, want %q", tt.data, got, tt.want)
		}
	}
}

func TestReadFIFO(t *testing.T) {
	env := newEnv(t)
	fifo := filepath.Join(env.ProjectDir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	// Reading it would block for ever; Read refuses instead.
	if r := call(t, Read{}, env, map[string]any{"file_path": fifo}); !r.IsError || !strings.Contains(text(t, r), "not a regular file") {
		t.Errorf("got %q", text(t, r))
	}
}

// sparseFile makes a 1 GB file: text, then zeros the disk does not hold
// (as a disk image or a preallocated log is).
func sparseFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(text)
	if err := f.Truncate(1 << 30); err != nil {
		t.Skip("no sparse files here:", err)
	}
}

// TestReadHugeFile reads 1 GB files. Read returns the text quickly, with
// memory bounded whatever the size, and says why it stopped; it never
// loads the file whole.
func TestReadHugeFile(t *testing.T) {
	env := newEnv(t)
	img := filepath.Join(env.Cwd(), "huge.img")
	sparseFile(t, img, "header\n")
	log := filepath.Join(env.Cwd(), "huge.log")
	var header strings.Builder
	for i := range 200 {
		fmt.Fprintf(&header, "line %03d %s\n", i+1, strings.Repeat("x", 54))
	}
	sparseFile(t, log, header.String())

	for _, tc := range []struct {
		name  string
		input map[string]any
		lines []string // that the result holds
		note  string   // and what it says
	}{
		{"binary from the start", map[string]any{"file_path": img}, nil, "looks like a binary file (a NUL byte at offset 7)"},
		{"whole", map[string]any{"file_path": log}, []string{"1\tline 001", "200\tline 200"}, "Line 201 is longer than 16 MB; the read stopped there"},
		{"first two", map[string]any{"file_path": log, "limit": 2}, []string{"1\tline 001", "2\tline 002"}, "Line 201 is longer than 16 MB"},
		{"past the text", map[string]any{"file_path": log, "offset": 300}, nil, "shorter than the provided offset (300). The file has 200 lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			r := call(t, Read{}, env, tc.input)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("read in %v, %d KB allocated", took, alloc>>10)
			got := text(t, r)
			for _, l := range tc.lines {
				if !strings.Contains(got, l) {
					t.Errorf("lacks %q:\n%.500s", l, got)
				}
			}
			if !strings.Contains(got, tc.note) || strings.ContainsRune(got, 0) {
				t.Errorf("want %q and no NUL byte:\n%.300q", tc.note, got)
			}
			if alloc > 4<<20 {
				t.Errorf("a read allocated %d KB", alloc>>10)
			}
		})
	}
	// The model saw part of the file only: Write must not replace it.
	if seen, ok := env.Files.Seen(log); !ok || !seen.Partial {
		t.Errorf("recorded as %+v, want a partial read", seen)
	}
}

// TestReadStopsAtBinaryTail: text followed by NUL bytes on the same
// pages returns the text and stops where the binary data starts.
func TestReadStopsAtBinaryTail(t *testing.T) {
	env := newEnv(t)
	path := filepath.Join(env.Cwd(), "mixed")
	data := strings.Repeat("text line\n", 1000) + "\x00\x01\x02tail\n" + "more\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	r := call(t, Read{}, env, map[string]any{"file_path": path})
	got := text(t, r)
	if r.IsError || !strings.Contains(got, "1000\ttext line\n") || !strings.Contains(got, "Line 1001 holds binary data") || strings.ContainsRune(got, 0) {
		t.Errorf("got %.200q … %.300q", got, got[max(0, len(got)-300):])
	}
}

func TestReadPDF(t *testing.T) {
	env := newEnv(t)
	pdf := "%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
	path := filepath.Join(env.ProjectDir, "doc.pdf")
	if err := os.WriteFile(path, []byte(pdf), 0o644); err != nil {
		t.Fatal(err)
	}
	r := call(t, Read{}, env, map[string]any{"file_path": path})
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != model.BlockDocument {
		t.Fatalf("result %+v", r)
	}
	var src struct{ Type, MediaType, Data string }
	json.Unmarshal(r.Content[0].Extra["source"], &struct {
		Type      *string `json:"type"`
		MediaType *string `json:"media_type"`
		Data      *string `json:"data"`
	}{&src.Type, &src.MediaType, &src.Data})
	if src.Type != "base64" || src.MediaType != "application/pdf" || src.Data != base64.StdEncoding.EncodeToString([]byte(pdf)) {
		t.Errorf("source %+v", src)
	}
	if _, seen := env.Files.Seen(path); !seen {
		t.Error("the read was not recorded")
	}
	// A .pdf that is not a PDF is read as a file.
	fake := filepath.Join(env.ProjectDir, "notes.pdf")
	os.WriteFile(fake, []byte("just text\n"), 0o644)
	if r := call(t, Read{}, env, map[string]any{"file_path": fake}); r.IsError || !strings.Contains(text(t, r), "just text") {
		t.Errorf("a text file named .pdf: %+v", r)
	}
}
