package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig learns GIF
	_ "image/jpeg"
	_ "image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairn-dev/cairn/internal/jsonw"
	"github.com/cairn-dev/cairn/model"
	"github.com/cairn-dev/cairn/tool"
)

// Limits of Read.
const (
	// ReadDefaultLimit is how many lines a Read without limit returns.
	ReadDefaultLimit = 2000
	// ReadMaxLineLength is where a longer line is cut.
	ReadMaxLineLength = 2000
	// ReadMaxOutput caps the text one Read returns, in bytes: past it the
	// model is told to read in parts.
	ReadMaxOutput = 256 << 10
	// ReadMaxImage is the largest image Read sends (its base64 stays under
	// the API's 5 MB per image).
	ReadMaxImage = 3_750_000
	// ReadMaxPDF is the largest PDF Read sends (its base64 stays well under
	// the API's 32 MB per request).
	ReadMaxPDF = 20_000_000
)

// sniffLen is how much of a file is examined to tell text from binary.
const sniffLen = 8 << 10

// readCountLimit is how far past the lines it returns Read goes on
// counting the file's lines; a longer file is reported as at least that
// many. readLongLine is how much of one line Read skips before giving up
// on it. Both keep a Read of a huge file (a 1 GB log, a sparse image
// with a text header) quick.
const (
	readCountLimit = 16 << 20
	readLongLine   = 16 << 20
)

// lineCut ends a line that was longer than ReadMaxLineLength.
const lineCut = "… [line truncated]"

// Read shows a text file with line numbers, or an image. It records what
// the model saw in env.Files, which Write and Edit check (SPEC F5).
type Read struct{}

var readSchema = schema(`{
	"type": "object",
	"properties": {
		"file_path": {"type": "string", "description": "Absolute path of the file to read"},
		"offset": {"type": "integer", "minimum": 1, "description": "Line number to start at (1 is the first line). Give it only for files too long to read at once"},
		"limit": {"type": "integer", "minimum": 1, "description": "How many lines to read. Give it only for files too long to read at once"}
	},
	"required": ["file_path"],
	"additionalProperties": false
}`)

// Spec describes Read to the model.
func (Read) Spec() model.ToolSpec {
	return model.ToolSpec{
		Name: "Read",
		Description: `Reads a file from the local filesystem and returns it with line numbers.

- file_path must be absolute, never relative.
- Without offset and limit you get the first ` + strconv.Itoa(ReadDefaultLimit) + ` lines, which is usually the whole file; read the whole file unless it is very long. For long files, give offset (first line, counting from 1) and limit (number of lines).
- Each line comes back as "<line number><tab><text>". The number and the tab are not part of the file: leave them out of anything you pass to Edit.
- Lines longer than ` + strconv.Itoa(ReadMaxLineLength) + ` characters are cut.
- PNG, JPEG, GIF and WebP images are shown to you as images, and PDF files as documents (up to 20 MB).
- Binary files cannot be read; inspect them with Bash instead. A directory cannot be read either: list it with ls through Bash, or find files with Glob.
- You must Read an existing file before changing it with Edit or Write.
- When several files are likely to be useful, read them all at once with parallel calls.
- Reading a file that does not exist is an error, not an empty result; an existing empty file comes back with a warning.`,
		InputSchema: readSchema,
	}
}

// ReadOnly reports true: Read changes nothing.
func (Read) ReadOnly(json.RawMessage) bool { return true }

// Destructive reports false.
func (Read) Destructive(json.RawMessage) bool { return false }

// ConcurrencySafe reports true.
func (Read) ConcurrencySafe(json.RawMessage) bool { return true }

// readDetail is Read's toolUseResult for text.
type readDetail struct {
	Type string   `json:"type"`
	File readFile `json:"file"`
}

type readFile struct {
	FilePath   string `json:"filePath"`
	Content    string `json:"content"`
	NumLines   int    `json:"numLines"`
	StartLine  int    `json:"startLine"`
	TotalLines int    `json:"totalLines"`
}

// imageDetail is Read's toolUseResult for an image.
type imageDetail struct {
	Type string    `json:"type"`
	File imageFile `json:"file"`
}

type imageFile struct {
	Base64       string           `json:"base64"`
	Type         string           `json:"type"`
	OriginalSize int64            `json:"originalSize"`
	Dimensions   *imageDimensions `json:"dimensions,omitempty"`
}

type imageDimensions struct {
	OriginalWidth  int `json:"originalWidth"`
	OriginalHeight int `json:"originalHeight"`
	DisplayWidth   int `json:"displayWidth"`
	DisplayHeight  int `json:"displayHeight"`
}

// imageExts are the extensions Read shows as images.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true}

// Run reads the file.
func (Read) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	a := parseArgs("Read", input, "file_path", "offset", "limit")
	filePath := a.str("file_path", true)
	offset, _ := a.int("offset")
	limit, hasLimit := a.int("limit")
	if a.err == nil && offset < 0 {
		a.err = errors.New(`parameter "offset" must be 1 or more`)
	}
	if a.err == nil && hasLimit && limit <= 0 {
		a.err = errors.New(`parameter "limit" must be 1 or more`)
	}
	if a.err != nil {
		return a.invalid(), nil
	}
	path, err := absFile(env, filePath)
	if err != nil {
		return failf("%v", err), nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failf("File does not exist: %s (the working directory is %s)", path, env.Cwd()), nil
	case err != nil:
		return failf("Cannot read %s: %v", path, err), nil
	case fi.IsDir():
		return failf("%s is a directory, not a file. List it with Bash (ls %s), or find files in it with Glob", path, path), nil
	case !fi.Mode().IsRegular():
		return failf("%s is not a regular file (%s); Read only reads files", path, fi.Mode().Type()), nil
	}
	if imageExts[strings.ToLower(filepath.Ext(path))] {
		if r, ok, err := readImage(env, path, fi); ok || err != nil {
			return r, err
		}
	}
	if strings.EqualFold(filepath.Ext(path), ".pdf") {
		if r, ok, err := readPDF(env, path, fi); ok || err != nil {
			return r, err
		}
	}
	if !hasLimit {
		limit = ReadDefaultLimit
	}
	start := max(offset, 1)
	return readText(ctx, env, path, fi, start, limit)
}

// readText reads lines start … start+limit-1 of a text file.
func readText(ctx context.Context, env *tool.Env, path string, fi fs.FileInfo, start, limit int) (tool.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return failf("Cannot read %s: %v", path, err), nil
	}
	defer f.Close()
	cr := &countingReader{r: f}
	br := bufio.NewReaderSize(cr, 64<<10)
	head, _ := br.Peek(sniffLen)
	if why := binaryReason(head); why != "" {
		return failf("%s looks like a binary file (%s); Read shows only text and images. Inspect it with Bash instead (for example file, or xxd | head)", path, why), nil
	}

	var (
		lines     []string
		total     int
		renderLen int
		stopped   string // why the read ended before the end of the file
		counted   int64  // bytes read when the last wanted line was taken
	)
	for end := false; !end; {
		if total%4096 == 0 && ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		if len(lines) > 0 && total >= start+limit-1 && cr.n-counted > readCountLimit {
			stopped = fmt.Sprintf("The file is larger than this read counted; it has more than %d lines.", total)
			break
		}
		total++
		keep := total >= start && total < start+limit
		line, last, err := readLine(br, keep)
		switch {
		case errors.Is(err, errLongLine):
			stopped = fmt.Sprintf("Line %d is longer than %d MB; the read stopped there. Look at the file with Bash (head -c, cut, grep) instead.", total, readLongLine>>20)
			total--
			end = true
			continue
		case err != nil:
			return failf("Cannot read %s: %v", path, err), nil
		}
		end = last
		if keep {
			if i := strings.IndexByte(line, 0); i >= 0 {
				stopped = fmt.Sprintf("Line %d holds binary data (a NUL byte); the read stopped there. Inspect the rest with Bash (for example xxd -s or strings).", total)
				total--
				break
			}
			line = strings.TrimSuffix(line, "\r")
			line = strings.ToValidUTF8(line, "\uFFFD")
			if utf8.RuneCountInString(line) > ReadMaxLineLength {
				line = string([]rune(line)[:ReadMaxLineLength]) + lineCut
			}
			lines = append(lines, line)
			renderLen += len(line) + 8
			counted = cr.n
		}
	}
	detail := readDetail{Type: "text", File: readFile{
		FilePath: path, Content: strings.Join(lines, "\n"),
		NumLines: len(lines), StartLine: start, TotalLines: total,
	}}
	if fi.Size() == 0 {
		detail.File.NumLines, detail.File.TotalLines = 0, 0
		recordSeen(env, path, false)
		r := tool.Text("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")
		r.Detail = detail
		return r, nil
	}
	if len(lines) == 0 {
		r := tool.Text(fmt.Sprintf("<system-reminder>Warning: the file exists but is shorter than the provided offset (%d). The file has %d lines.</system-reminder>", start, total))
		r.Detail = detail
		return r, nil
	}
	if renderLen > ReadMaxOutput {
		return failf("Lines %d–%d of %s are %d KB, more than the %d KB one Read may return. Read fewer lines at a time with offset and limit, or search the file with Grep",
			start, start+len(lines)-1, path, renderLen>>10, ReadMaxOutput>>10), nil
	}
	var b strings.Builder
	b.Grow(renderLen)
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.Itoa(start + i))
		b.WriteByte('\t')
		b.WriteString(l)
	}
	partial := start > 1 || start+len(lines)-1 < total || stopped != ""
	if seen, ok := env.Files.Seen(path); ok && partial && !seen.Partial &&
		seen.ModTime.Equal(fi.ModTime()) && seen.Size == fi.Size() {
		partial = false // the model read all of this very version before
	}
	env.Files.Saw(path, tool.FileSeen{ModTime: fi.ModTime(), Size: fi.Size(), Partial: partial})
	if stopped != "" {
		b.WriteString("\n\n<system-reminder>" + stopped + "</system-reminder>")
	}
	r := tool.Text(b.String())
	r.Detail = detail
	return r, nil
}

// errLongLine is a line longer than readLongLine.
var errLongLine = errors.New("line too long")

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readLine reads one line without its "\n"; last reports that the file
// ended with it. When keep is false the text is skipped, not stored; a kept
// line stores at most what ReadMaxLineLength characters can take. A line
// longer than readLongLine is errLongLine.
func readLine(br *bufio.Reader, keep bool) (line string, last bool, err error) {
	const maxBytes = ReadMaxLineLength*utf8.UTFMax + len(lineCut)
	var buf []byte
	long := 0
	for {
		frag, err := br.ReadSlice('\n')
		if keep && len(buf) < maxBytes {
			buf = append(buf, frag[:min(len(frag), maxBytes-len(buf))]...)
		}
		switch {
		case err == nil:
			return string(bytes.TrimSuffix(buf, []byte("\n"))), false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if long += len(frag); long > readLongLine {
				return "", false, errLongLine
			}
			continue
		case errors.Is(err, io.EOF):
			return string(buf), true, nil
		default:
			return "", false, err
		}
	}
}

// binaryReason says why head (the start of a file) is not text, or "".
// A NUL byte means binary; so do many bytes that are not UTF-8 (a few are
// tolerated, as in a Latin-1 file with some accents).
func binaryReason(head []byte) string {
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return fmt.Sprintf("a NUL byte at offset %d", i)
	}
	invalid := 0
	for b := head; len(b) > 0; {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 && (len(b) >= utf8.UTFMax || utf8.FullRune(b)) {
			invalid++
		}
		b = b[n:]
	}
	if invalid > 0 && invalid*10 > len(head) {
		return fmt.Sprintf("%d of its first %d bytes are not UTF-8 text", invalid, len(head))
	}
	return ""
}

// readImage returns the image as an image block; ok is false when the
// content is not an image after all (it is then read as a file).
func readImage(env *tool.Env, path string, fi fs.FileInfo) (tool.Result, bool, error) {
	if fi.Size() > ReadMaxImage {
		return failf("%s is %.1f MB, larger than the %.2f MB an image may be. Make a smaller copy with Bash (for example with ImageMagick's convert -resize) and read that",
			path, float64(fi.Size())/1e6, float64(ReadMaxImage)/1e6), true, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return failf("Cannot read %s: %v", path, err), true, nil
	}
	// Trust the bytes over the extension; what the API cannot show is read
	// as a file (and reported as binary).
	mediaType := imageType(data)
	if mediaType == "" {
		return tool.Result{}, false, nil
	}
	enc := base64.StdEncoding.EncodeToString(data)
	detail := imageDetail{Type: "image", File: imageFile{Base64: enc, Type: mediaType, OriginalSize: fi.Size()}}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		detail.File.Dimensions = &imageDimensions{cfg.Width, cfg.Height, cfg.Width, cfg.Height}
	}
	source, err := jsonw.Marshal(struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}{"base64", mediaType, enc})
	if err != nil {
		return tool.Result{}, true, err
	}
	env.Files.Saw(path, tool.FileSeen{ModTime: fi.ModTime(), Size: fi.Size()})
	block := model.Block{Type: model.BlockImage, Extra: map[string]json.RawMessage{"source": source}}
	return tool.Result{Content: []model.Block{block}, Detail: detail}, true, nil
}

// pdfDetail is Read's toolUseResult for a PDF.
type pdfDetail struct {
	Type string  `json:"type"`
	File pdfFile `json:"file"`
}

type pdfFile struct {
	FilePath     string `json:"filePath"`
	Base64       string `json:"base64"`
	OriginalSize int64  `json:"originalSize"`
}

// readPDF returns a PDF as a document block, as the API reads PDFs; ok is
// false when the file is not a PDF after all (it is then read as a file).
func readPDF(env *tool.Env, path string, fi fs.FileInfo) (tool.Result, bool, error) {
	if fi.Size() > ReadMaxPDF {
		return failf("%s is %.1f MB, larger than the %.0f MB a PDF may be. Extract the pages you need with Bash (for example pdftotext -f 1 -l 10, or qpdf --pages) and read that",
			path, float64(fi.Size())/1e6, float64(ReadMaxPDF)/1e6), true, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return failf("Cannot read %s: %v", path, err), true, nil
	}
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return tool.Result{}, false, nil
	}
	enc := base64.StdEncoding.EncodeToString(data)
	source, err := jsonw.Marshal(struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	}{"base64", "application/pdf", enc})
	if err != nil {
		return tool.Result{}, true, err
	}
	env.Files.Saw(path, tool.FileSeen{ModTime: fi.ModTime(), Size: fi.Size()})
	block := model.Block{Type: model.BlockDocument, Extra: map[string]json.RawMessage{"source": source}}
	return tool.Result{Content: []model.Block{block}, Detail: pdfDetail{Type: "pdf", File: pdfFile{FilePath: path, Base64: enc, OriginalSize: fi.Size()}}}, true, nil
}

// imageType returns the media type of an image the API accepts (PNG,
// JPEG, GIF, WebP) from its first bytes, or "".
func imageType(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// TouchedPaths implements tool.PathToucher: the file it reads.
func (Read) TouchedPaths(input json.RawMessage) []tool.PathUse { return fileUse(input, false) }

// Summary implements tool.Summarizer: the file.
func (Read) Summary(input json.RawMessage, rel func(string) string) string {
	if p := stringArgs(input, "file_path")[0]; p != "" {
		return rel(p)
	}
	return ""
}

// Reobtainable implements tool.Reobtainable: the file can be read again.
func (Read) Reobtainable() bool { return true }

// ResultLimit implements tool.ResultLimiter: a Read result is never saved
// to a file, since Read bounds its own output and is how saved results
// are read back.
func (Read) ResultLimit() int { return -1 }
